"""The planner's answer: what to run where, at what cost, with what chance of meeting each SLO.

``answer.build_answer`` turns a finished capacity search into the ``answer`` object of the API; the card
(templates/decisions/_card.html) renders it on the search page and wherever another page includes it.
Django-free: plain dicts in, a plain dict out.
"""
