"""Stage 2: Alg. 2 greedy operator-to-device placement with interference, and the default-stream mode.

Choices the paper leaves open (spec 2.4), each a parameter with a documented default:

* a device is one GPU; a replica with parallelism p occupies p GPUs, each holding its per-worker memory and
  its SM load = busy fraction ``lambda T_v(b) / (b r)`` x the kernel's SM utilisation (profiles.sm_util);
* base instances: ``k_base = min_v r_v`` full copies of the graph, each on ``max_v p_v`` GPUs. If a base GPU
  would be oversubscribed (SM load > U_d), k_base grows and operators with fewer replicas get k_base: a full
  instance must run at its profiled speed, as the model-level baseline's replicas do;
* interference, ``Options.interference`` (the paper has no data, only "I_{d,v}(b, p) >= 1 from profiling"
  applied to the replica being placed, line 14):
  ``placed`` (default, as printed): only the extra replica being colocated is slowed, by the constant
  ``I_{d,v}(b, p) = 1 + kappa u_v(b, p)`` (kappa = 1).
  ``load``: a replica sharing its GPU with replicas of other instances runs
  ``I = 1 + kappa u_v(b, p) min(1, x)`` times slower, u_v being its kernel's SM utilisation (Fig. 8: operators
  that saturate the SMs are the ones sensitive to their MPS share; decode / launch-bound ones are flat) and x
  the SM load of those other replicas (how often they compete); kappa = 1. A base instance alone on its GPUs
  runs at the profiled speed, as a model-level replica does.
  ``sm_sum`` (physical oversubscription; spec 2.4's summed-SM-utilisation factor): every replica on a GPU
  slows by ``max(1, SM load / U_d)``, applied to the model-level replicas as well.
  An operator's service time is the mean of its replicas' factors times T_v; RECOMPUTELATENCY re-evaluates
  Eq. (3) with those factors;
* compute capacity (``Options.enforce_capacity``): the paper uses the compute slack only to score candidates
  (default); enforcing it also rejects a GPU whose SM load would pass U_d;
* candidates are the base GPUs and (``reuse_new_devices``, default) GPUs opened for earlier extras; the score
  is ``w_mem * slack_mem / M_d + w_comp * slack_comp / U_d`` (w = 0.5 each);
* default stream (``sharing=False``, GPUs without MPS / MIG / green contexts): every extra replica gets GPUs
  of its own.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from planner.opscale.model import Config, Evaluator


@dataclass(frozen=True)
class PlacementOptions:
    sharing: bool = True
    w_mem: float = 0.5
    w_comp: float = 0.5
    reuse_new_devices: bool = True


@dataclass
class Device:
    index: int
    base: bool
    mem: float = 0.0
    load: float = 0.0  # SM load (sum of busy x SM utilisation)
    busy: float = 0.0  # sum of busy fractions
    base_busy: float = 0.0
    base_load: float = 0.0
    replicas: list[tuple[str, int]] = field(default_factory=list)

    def add(self, v: str, k: int, mem: float, load: float, busy: float) -> None:
        self.mem += mem
        self.load += load
        self.busy += busy
        self.replicas.append((v, k))

    def remove_last(self, mem: float, load: float, busy: float) -> None:
        self.mem -= mem
        self.load -= load
        self.busy -= busy
        self.replicas.pop()


@dataclass
class Placement:
    config: Config
    devices: list[Device]
    k_base: int
    latency_s: float
    factors: dict[str, float]
    feasible: bool
    reason: str = ""

    @property
    def gpus(self) -> int:
        return len(self.devices)

    @property
    def new_devices(self) -> int:
        return sum(1 for d in self.devices if not d.base)

    def to_dict(self) -> dict:
        return {
            "gpus": self.gpus,
            "k_base": self.k_base,
            "new_devices": self.new_devices,
            "latency_s": self.latency_s,
            "feasible": self.feasible,
            "reason": self.reason,
            "factors": self.factors,
            "devices": [
                {
                    "index": d.index,
                    "base": d.base,
                    "mem_gb": round(d.mem / 1e9, 3),
                    "sm_load": round(d.load, 4),
                    "replicas": [f"{v}#{k}" for v, k in d.replicas],
                }
                for d in self.devices
            ],
        }


def device_factor(ev: Evaluator, load: float) -> float:
    """Slow-down of every replica on a GPU with this SM load (``sm_sum`` only; 1 in the paper mode)."""
    if ev.options.interference == "sm_sum":
        return max(1.0, load / ev.options.capacity)
    return 1.0


def _factors(ev: Evaluator, devices: list[Device], config: Config, k_base: int) -> dict[str, float]:
    """Per operator: T'_v / T_v as the mean over its replicas (GPU shards take the worst of the replica)."""
    worst: dict[tuple[str, int], float] = {}
    for d in devices:
        for v, k in d.replicas:
            if ev.options.interference == "sm_sum":
                f = device_factor(ev, d.load)
            elif ev.options.interference == "placed":
                r, b, p = config[v]
                shared = (not d.base or k >= k_base) and len(d.replicas) > 1
                u = ev.profile.sm_util(v, ev.workload.phase, b, ev.workload.length, p)
                f = 1.0 + ev.options.kappa * u if shared else 1.0
            else:  # load
                r, b, p = config[v]
                mine = d.base_load if (d.base and k < k_base) else ev.sm_load(v, r, b, p)
                foreign = min(1.0, max(0.0, d.load - mine))
                f = (
                    1.0
                    + ev.options.kappa * ev.profile.sm_util(v, ev.workload.phase, b, ev.workload.length, p) * foreign
                )
            worst[(v, k)] = max(worst.get((v, k), 1.0), f)
    out = {}
    for v in ev.ops:
        r = config[v][0]
        out[v] = sum(worst.get((v, k), 1.0) for k in range(r)) / r
    return out


def _base_devices(ev: Evaluator, config: Config, k_base: int, width: int):
    devices = [Device(g, True) for g in range(k_base * width)]
    for v in ev.ops:
        r, b, p = config[v]
        mem, load, busy = ev.memory(v, b, p), ev.sm_load(v, r, b, p), ev.busy(v, r, b, p)
        for i in range(k_base):
            for g in range(p):
                d = devices[i * width + g]
                d.add(v, i, mem, load, busy)
                d.base_busy += busy
                d.base_load += load
    return devices


def place(ev: Evaluator, config: Config, slo_s: float, opts: PlacementOptions | None = None) -> Placement:
    opts = opts or PlacementOptions()
    cap_mem = ev.profile.gpu.memory_gb * 1e9
    cap = ev.options.capacity
    width = max(p for _r, _b, p in config.values())
    k_base = min(r for r, _b, _p in config.values())
    reason = ""
    limit = 4 * max(r for r, _b, _p in config.values()) + 64
    while ev.options.interference == "sm_sum" or ev.options.enforce_capacity:
        # base GPUs: within capacity when it is enforced; with sm_sum, slow enough to still meet the SLO
        # (the rule the model-level baseline's replicas obey)
        cfg = {v: (max(r, k_base), b, p) for v, (r, b, p) in config.items()}
        base_load = sum(ev.sm_load(v, *cfg[v]) for v in ev.ops)
        if ev.options.enforce_capacity:
            ok = base_load <= cap
        else:
            factor = device_factor(ev, base_load)
            ok = ev.latency(cfg, {v: factor for v in ev.ops}) <= slo_s
        if ok or k_base > limit:
            config = cfg
            break
        k_base += 1
        reason = f"k_base raised to {k_base} so the base GPUs meet the SLO (capacity {cap})"
    devices = _base_devices(ev, config, k_base, width)
    if any(d.mem > cap_mem for d in devices):
        return Placement(
            config, devices, k_base, float("inf"), {}, False, "a full instance does not fit the GPU memory"
        )
    own = {v: ev.busy(v, *config[v]) for v in ev.ops}
    mem = {v: ev.memory(v, config[v][1], config[v][2]) for v in ev.ops}
    load = {v: ev.sm_load(v, *config[v]) for v in ev.ops}
    extras = [(v, k) for v in ev.ops for k in range(k_base, config[v][0])]
    extras.sort(key=lambda vk: -ev.service(vk[0], config[vk[0]][1], config[vk[0]][2]))  # T_v descending
    # Placing a replica never lowers a GPU's free memory or any operator's slow-down, so a GPU that fails the
    # memory, capacity or SLO check for operator v fails it for every later replica of v: remember it.
    rejected: set[tuple[str, int]] = set()
    for v, k in extras:
        for _shard in range(config[v][2]):
            best = None
            pool = [d for d in devices if d.base or opts.reuse_new_devices] if opts.sharing else []
            for d in pool:
                if (v, d.index) in rejected or (v, k) in d.replicas:
                    continue
                if d.mem + mem[v] > cap_mem or (ev.options.enforce_capacity and d.load + load[v] > cap):
                    rejected.add((v, d.index))
                    continue
                d.add(v, k, mem[v], load[v], own[v])
                lat = ev.latency(config, _factors(ev, devices, config, k_base))
                d.remove_last(mem[v], load[v], own[v])
                if lat > slo_s:
                    rejected.add((v, d.index))
                    continue
                score = opts.w_mem * (cap_mem - d.mem - mem[v]) / cap_mem + opts.w_comp * (cap - d.load - load[v]) / cap
                if best is None or score > best[0]:
                    best = (score, d)
            if best is None:
                d = Device(len(devices), False)
                devices.append(d)
            else:
                d = best[1]
            d.add(v, k, mem[v], load[v], own[v])
    factors = _factors(ev, devices, config, k_base)
    lat = ev.latency(config, factors)
    return Placement(config, devices, k_base, lat, factors, lat <= slo_s, reason)
