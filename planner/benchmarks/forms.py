from __future__ import annotations

from django import forms


class UploadForm(forms.Form):
    file = forms.FileField(help_text="inference-perf result folder as .zip / .tar.gz, vLLM bench serving JSON "
                                     "(--save-detailed), or a per-request CSV / JSONL")
    name = forms.CharField(required=False, max_length=200)
    gpu = forms.CharField(required=False, max_length=120, help_text="GPU type the server ran on, e.g. h100-80gb")
    model = forms.CharField(required=False, max_length=200, help_text="served model (per-request files)")
    tensor_parallel_size = forms.IntegerField(required=False, min_value=1, max_value=64,
                                              help_text="TP (per-request files; folders carry it)")
    max_num_batched_tokens = forms.IntegerField(required=False, min_value=1)
    max_num_seqs = forms.IntegerField(required=False, min_value=1)

    ENGINE_KEYS = ("model", "tensor_parallel_size", "max_num_batched_tokens", "max_num_seqs")

    def engine(self) -> dict:
        return {k: self.cleaned_data[k] for k in self.ENGINE_KEYS if self.cleaned_data.get(k) not in (None, "")}


class CalibrateForm(forms.Form):
    holdout = forms.FloatField(initial=0.25, min_value=0.01, max_value=0.99,
                               help_text="share of the chosen runs held out to measure the error")
    seed = forms.IntegerField(initial=0, min_value=0)
