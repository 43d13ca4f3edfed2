"""Measure names in ir_measures syntax, parsed into definitions that are recorded with
every result (METHODOLOGY rule 6: every number has its definition attached)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from golden_store.errors import ValidationError

_NAMES = {
    "ndcg": "nDCG", "ap": "AP", "rr": "RR", "p": "P", "r": "R", "success": "Success",
    "bpref": "Bpref", "judged": "Judged",
}
_NEEDS_K = {"P", "R", "Success", "Judged"}
_NO_K = {"Bpref"}
_SYNTAX = re.compile(r"^\s*(?P<name>[A-Za-z]+)\s*(?:\((?P<params>[^)]*)\))?\s*(?:@\s*(?P<k>\d+))?\s*$")
_PARAM = re.compile(r"^\s*(?P<key>\w+)\s*=\s*(?P<val>'[^']*'|\"[^\"]*\"|[\w.-]+)\s*$")


@dataclass(frozen=True)
class Measure:
    name: str           # nDCG, AP, RR, P, R, Success, Bpref, Judged
    k: int | None       # cutoff (None: whole ranking)
    rel: int = 1        # minimum grade counted as relevant (binary measures)
    gain: str = "linear"  # nDCG only: linear (trec_eval) or exp (2^g - 1, "exp-log2")

    def __str__(self) -> str:
        params = []
        if self.name == "nDCG" and self.gain == "exp":
            params.append("dcg='exp-log2'")
        if self.rel != 1 and self.name not in ("nDCG", "Judged"):
            params.append(f"rel={self.rel}")
        p = f"({','.join(params)})" if params else ""
        return f"{self.name}{p}" + (f"@{self.k}" if self.k is not None else "")

    def definition(self) -> str:
        k = f" in the top {self.k}" if self.k else ""
        rel = f"grade >= {self.rel}"
        return {
            "nDCG": (f"normalized DCG{k}; gain = {'2^grade - 1' if self.gain == 'exp' else 'grade'}, discount "
                     f"1/log2(rank+1); ideal from all judged grades of the query (trec_eval ndcg_cut"
                     f"{'' if self.gain == 'linear' else ', Burges gain'})"),
            "AP": f"average precision{k}, relevant = {rel}, divided by the number of relevant documents",
            "RR": f"1/rank of the first relevant document{k} (relevant = {rel}), 0 if none",
            "P": f"relevant documents{k} / {self.k} (relevant = {rel})",
            "R": f"relevant documents{k} / all relevant documents of the query (relevant = {rel})",
            "Success": f"1 if any relevant document{k} (relevant = {rel}), else 0",
            "Bpref": f"trec_eval bpref: unjudged documents skipped; relevant = {rel}",
            "Judged": (f"fraction of the returned top {self.k} that carry a judgment (any grade); divides by "
                       f"min({self.k}, results returned) (ir_measures)"),
        }[self.name]


def parse_measure(text: str) -> Measure:
    m = _SYNTAX.match(text or "")
    if not m or m["name"].lower() not in _NAMES:
        raise ValidationError(
            f"Unknown measure {text!r}: use nDCG@k, nDCG(dcg='exp-log2')@k, AP, AP@k, RR, RR@k, P@k, R@k, "
            f"Success@k, Bpref, Judged@k (add rel=2 in parentheses for a binary threshold)."
        )
    name = _NAMES[m["name"].lower()]
    k = int(m["k"]) if m["k"] else None
    if k is not None and k < 1:
        raise ValidationError(f"Measure {text!r}: the cutoff must be at least 1.")
    if name in _NEEDS_K and k is None:
        raise ValidationError(f"Measure {text!r} needs a cutoff, e.g. {name}@10.")
    if name in _NO_K and k is not None:
        raise ValidationError(f"Measure {text!r}: {name} takes no cutoff.")
    rel, gain = 1, "linear"
    for part in filter(None, (m["params"] or "").split(",")):
        pm = _PARAM.match(part)
        if not pm:
            raise ValidationError(f"Measure {text!r}: cannot read parameter {part.strip()!r}.")
        key, val = pm["key"], pm["val"].strip("'\"")
        if key == "rel" and val.isdigit():
            rel = int(val)
        elif key == "dcg" and name == "nDCG" and val in ("exp-log2", "log2"):
            gain = "exp" if val == "exp-log2" else "linear"
        else:
            raise ValidationError(f"Measure {text!r}: unsupported parameter {key}={val}.")
    return Measure(name, k, rel, gain)


def parse_measures(texts) -> list[Measure]:
    """Several measure names (each as :func:`parse_measure` reads it)."""
    return [parse_measure(t) for t in texts]
