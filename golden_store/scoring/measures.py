"""The measure registry: one small declarative definition per measure (its parameters,
cutoff, formula, source, definition text, how per-query values aggregate, and its trec_eval
name), and the parser for measure names in ir_measures syntax (``nDCG@10``, ``AP(rel=2)``,
``RBP(p=0.9)``, ``IPrec@0.1``) or trec_eval syntax (``ndcg_cut_10``, ``P.5,10``,
``iprec_at_recall``, ``all_trec``). Every result carries each measure's definition
(METHODOLOGY rule 6: every number has its definition attached).

This module imports nothing heavy: formulas are named here and looked up in
:mod:`golden_store.scoring.formulas` when a run is scored.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from golden_store.core.errors import ValidationError

TREC_CUTOFFS = (5, 10, 15, 20, 30, 100, 200, 500, 1000)
RECALL_LEVELS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0)
RPREC_MULTS = (0.2, 0.4, 0.6, 0.8, 1.0, 1.2, 1.4, 1.6, 1.8, 2.0)


@dataclass(frozen=True)
class Param:
    name: str
    kind: str          # int | float | bool | str | gains | floats
    default: Any
    choices: tuple = ()


@dataclass(frozen=True)
class MeasureDef:
    """One measure. ``formula`` names a function of :mod:`~golden_store.scoring.formulas`;
    ``text`` is the definition recorded with results (formatted with ``k``, ``rel`` and the
    parameters); ``trec`` is trec_eval's name (``{k}`` for the cutoff), ``trec_cut`` its
    name with a cutoff when the two differ (``map`` / ``map_cut_{k}``)."""

    name: str
    formula: str
    source: str
    text: str
    cutoff: str = "none"            # none | optional | required
    cutoff_kind: str = "int"        # int | float (a recall level or an R multiple)
    rel: int | None = 1             # default relevance threshold; None: the measure uses grades
    uses_rel: bool = True           # False: grades only (nDCG, ERR, Judged)
    params: tuple[Param, ...] = ()
    aggregate: str = "mean"         # mean | sum | gmean (over queries)
    trec: str | None = None
    trec_cut: str | None = None

    def param(self, name: str) -> Param | None:
        return next((p for p in self.params if p.name == name), None)


_DEFS: list[MeasureDef] = [
    # ---- ir_measures names, trec_eval semantics ------------------------------------------
    MeasureDef("P", "precision", "trec_eval P_k", "relevant documents in the top {k} / {k} (relevant = grade >= {rel})",
               cutoff="required", trec="P_{k}"),
    MeasureDef("R", "recall", "trec_eval recall_k",
               "relevant documents in the top {k} / all relevant documents of the query (relevant = grade >= {rel})",
               cutoff="required", trec="recall_{k}"),
    MeasureDef("AP", "average_precision", "trec_eval map / map_cut_k",
               "average precision{in_k}, relevant = grade >= {rel}, divided by the number of relevant documents",
               cutoff="optional", trec="map", trec_cut="map_cut_{k}"),
    MeasureDef("RR", "reciprocal_rank", "trec_eval recip_rank (ir_measures RR@k for a cutoff)",
               "1/rank of the first relevant document{in_k} (relevant = grade >= {rel}), 0 if none; its mean over "
               "queries is the MRR (MRR and MRR@k are read as RR and RR@k, ir_measures' names)",
               cutoff="optional", trec="recip_rank"),
    MeasureDef("nDCG", "ndcg", "trec_eval ndcg / ndcg_cut_k (dcg='exp-log2': Burges' 2^g - 1)",
               "normalized DCG{in_k}; gain = {gain_text}, discount 1/log2(rank+1); ideal from all judged grades of "
               "the query{ideal_cut} (trec_eval {trec_name})",
               cutoff="optional", rel=None, uses_rel=False,
               params=(Param("dcg", "str", "log2", ("log2", "exp-log2")), Param("gains", "gains", None)),
               trec="ndcg", trec_cut="ndcg_cut_{k}"),
    MeasureDef("Success", "success", "trec_eval success_k", "1 if any relevant document in the top {k} "
               "(relevant = grade >= {rel}), else 0", cutoff="required", trec="success_{k}"),
    MeasureDef("Bpref", "bpref", "trec_eval bpref",
               "trec_eval bpref: unjudged documents (and negative grades) skipped; each relevant retrieved document "
               "scores 1 - min(judged non-relevant above, R) / min(R, N); relevant = grade >= {rel}", trec="bpref"),
    MeasureDef("Judged", "judged", "ir_measures Judged",
               "fraction of the returned{top_k} that carry a judgment (grade >= 0; a negative grade is 'in the "
               "pool, not judged' as in trec_eval); divides by {shown} (ir_measures)",
               cutoff="optional", rel=None, uses_rel=False),
    MeasureDef("Rprec", "rprec", "trec_eval Rprec",
               "relevant documents in the top R / R, R = relevant documents of the query (grade >= {rel})",
               trec="Rprec"),
    MeasureDef("SetP", "set_p", "trec_eval set_P / set_relative_P",
               "{setp_text} (relevant = grade >= {rel})", params=(Param("relative", "bool", False),),
               trec="set_P"),
    MeasureDef("SetR", "set_r", "trec_eval set_recall",
               "relevant retrieved / relevant documents of the query (relevant = grade >= {rel})", trec="set_recall"),
    MeasureDef("SetF", "set_f", "trec_eval set_F",
               "(beta+1) P R / (beta P + R) over the retrieved set, beta = {beta} (trec_eval's parameter; relevant = "
               "grade >= {rel})", params=(Param("beta", "float", 1.0),), trec="set_F"),
    MeasureDef("SetAP", "set_ap", "trec_eval set_map",
               "relevant retrieved^2 / (retrieved x relevant): set precision x set recall (relevant = grade >= {rel})",
               trec="set_map"),
    MeasureDef("NumQ", "num_q", "trec_eval num_q", "1 per query; the overall value is the number of queries",
               rel=None, uses_rel=False, aggregate="sum", trec="num_q"),
    MeasureDef("NumRet", "num_ret", "trec_eval num_ret / num_rel_ret",
               "{numret_text}; the overall value is the sum over queries", rel=None, aggregate="sum",
               trec="num_ret"),
    MeasureDef("NumRel", "num_rel", "trec_eval num_rel",
               "relevant documents of the query (grade >= {rel}); the overall value is the sum over queries",
               aggregate="sum", trec="num_rel"),
    MeasureDef("IPrec", "iprec", "trec_eval iprec_at_recall",
               "interpolated precision at recall {k}: the best precision at or after the {cut_text}-th relevant "
               "retrieved document (relevant = grade >= {rel})",
               cutoff="required", cutoff_kind="float", params=(Param("cut", "str", "round", ("round", "v9")),),
               trec="iprec_at_recall_{k:.2f}"),
    MeasureDef("infAP", "infap", "trec_eval infAP",
               "inferred AP (Yilmaz and Aslam): precision at each relevant document estimated from the judged "
               "documents above it; a negative grade is pooled but not judged (relevant = grade >= {rel})",
               trec="infAP"),
    MeasureDef("ERR", "err", "ir_measures ERR (gdeval)",
               "expected reciprocal rank in the top {k}: R = (2^grade - 1) / 16 (gdeval, grades 0-4), sum of R / "
               "rank x the chance no earlier document satisfied", cutoff="required", rel=None, uses_rel=False),
    MeasureDef("RBP", "rbp", "ir_measures RBP (rel given, binary) / trec_eval rbp (graded)",
               "rank-biased precision (1 - p) sum gain p^(rank - 1), p = {p}; {rbp_gain}", rel=None,
               params=(Param("p", "float", 0.8),), trec="rbp"),
    # ---- trec_eval measures ir_measures does not name --------------------------------------
    MeasureDef("gm_map", "average_precision", "trec_eval gm_map",
               "average precision per query (relevant = grade >= {rel}); the overall value is the geometric mean "
               "of max(AP, 0.00001)", aggregate="gmean", trec="gm_map"),
    MeasureDef("gm_bpref", "bpref", "trec_eval gm_bpref",
               "bpref per query (relevant = grade >= {rel}); the overall value is the geometric mean of "
               "max(bpref, 0.00001)", aggregate="gmean", trec="gm_bpref"),
    MeasureDef("Rprec_mult", "rprec_mult", "trec_eval Rprec_mult",
               "precision at (long)({k} R + 0.9) documents (relevant = grade >= {rel})",
               cutoff="required", cutoff_kind="float", trec="Rprec_mult_{k:.2f}"),
    MeasureDef("11pt_avg", "iprec_avg", "trec_eval 11pt_avg",
               "interpolated precision averaged over recall levels {levels}, each at the {cut_text}-th relevant "
               "retrieved document (relevant = grade >= {rel})",
               params=(Param("levels", "floats", RECALL_LEVELS), Param("cut", "str", "round", ("round", "v9"))),
               trec="11pt_avg"),
    MeasureDef("relative_P", "relative_p", "trec_eval relative_P",
               "relevant documents in the top {k} / min({k}, R) (relevant = grade >= {rel})",
               cutoff="required", trec="relative_P_{k}"),
    MeasureDef("num_nonrel_judged_ret", "num_nonrel_judged_ret", "trec_eval num_nonrel_judged_ret",
               "retrieved documents judged non-relevant (0 <= grade < {rel}); the overall value is the sum",
               aggregate="sum", trec="num_nonrel_judged_ret"),
    MeasureDef("utility", "utility", "trec_eval utility",
               "a x relevant retrieved + b x non-relevant retrieved + c x relevant missed + d x non-relevant not "
               "retrieved, (a, b, c, d) = ({a}, {b}, {c}, {d}), collection size {n_docs} (relevant = grade >= {rel})",
               params=(Param("a", "float", 1.0), Param("b", "float", -1.0), Param("c", "float", 0.0),
                       Param("d", "float", 0.0), Param("n_docs", "int", 0)), trec="utility"),
    MeasureDef("binG", "bin_g", "trec_eval binG",
               "average over relevant documents of 1 / log2(2 + non-relevant retrieved before it) "
               "(relevant = grade >= {rel})", trec="binG"),
    MeasureDef("G", "gain_g", "trec_eval G",
               "trec_eval's experimental gain measure: g / log2(2 + ideal cost so far - gain so far) per document, "
               "over the total ideal gain; gain = {gain_text}", rel=None, uses_rel=False,
               params=(Param("gains", "gains", None),), trec="G"),
    MeasureDef("ndcg_rel", "ndcg_rel", "trec_eval ndcg_rel",
               "nDCG averaged over the relevant (positive-gain) documents; gain = {gain_text}", rel=None,
               uses_rel=False, params=(Param("gains", "gains", None),), trec="ndcg_rel"),
    MeasureDef("Rndcg", "rndcg", "trec_eval Rndcg",
               "nDCG averaged at the points where the ideal gain changes; gain = {gain_text}; 0 when no document "
               "has grade >= {rel}", params=(Param("gains", "gains", None),), trec="Rndcg"),
    MeasureDef("rbp_resid", "rbp_resid", "trec_eval rbp_resid",
               "the RBP (p = {p}) an all-relevant filling of the unjudged retrieved documents would add: p^n + "
               "(1 - p) sum over unjudged ranks of p^(rank - 1); 0 with none unjudged",
               rel=None, uses_rel=False, params=(Param("p", "float", 0.9),), trec="rbp_resid"),
    MeasureDef("unj", "unjudged", "trec_eval unj_k",
               "unjudged documents (no judgment, or a negative grade) in the top {k} / {k}",
               cutoff="required", rel=None, uses_rel=False, trec="unj_{k}"),
]
REGISTRY: dict[str, MeasureDef] = {d.name: d for d in _DEFS}
# Other names people give a measure, read as ir_measures reads them (``ir_measures.parse_measure
# ("MRR@10")`` is ``RR@10``): accepted wherever a measure name is taken, reported under the
# canonical name, whose definition mentions the alias.
ALIASES: dict[str, str] = {"MRR": "RR"}
_BY_LOWER = {**{d.name.lower(): d for d in _DEFS}, **{a.lower(): REGISTRY[n] for a, n in ALIASES.items()}}


@dataclass(frozen=True)
class Measure:
    """A measure with its parameters. ``k``: cutoff (a recall level for IPrec, an R multiple
    for Rprec_mult; None: the whole ranking); ``rel``: minimum grade counted relevant (None:
    the measure uses grades); ``gain``: nDCG's gain, ``linear`` (trec_eval) or ``exp``
    (2^g - 1); ``params``: the other parameters that differ from their defaults."""

    name: str
    k: int | float | None = None
    rel: int | None = 1
    gain: str = "linear"
    params: tuple[tuple[str, Any], ...] = field(default=())

    @property
    def spec(self) -> MeasureDef:
        return REGISTRY[self.name]

    def get(self, key: str) -> Any:
        for name, value in self.params:
            if name == key:
                return value
        p = self.spec.param(key)
        return p.default if p is not None else None

    @property
    def threshold(self) -> int:
        """``rel`` for a formula that counts relevant documents. Only a measure that scores
        grades has ``rel`` None, and its formula never asks; a Measure built by hand with
        ``rel=None`` for one that counts gets this error rather than a wrong count."""
        if self.rel is None:
            raise ValidationError(f"Measure {self.name} counts relevant documents: it needs rel (a grade), not None.")
        return self.rel

    @property
    def cutoff(self) -> int | float:
        """``k`` for a formula that divides by or compares with its cutoff (P@k, IPrec@x,
        Rprec_mult@x...): the parser requires one for these; a Measure built by hand without
        one gets this error."""
        if self.k is None:
            raise ValidationError(f"Measure {self.name} needs a cutoff (k), e.g. {self.name}@10.")
        return self.k

    @property
    def aggregate(self) -> str:
        return self.spec.aggregate

    def __str__(self) -> str:
        d = self.spec
        parts = []
        if self.name == "nDCG" and self.gain == "exp":
            parts.append("dcg='exp-log2'")
        if d.uses_rel and self.rel != d.rel:
            parts.append(f"rel={self.rel}")
        for p in d.params:
            if p.name == "dcg":
                continue
            value = self.get(p.name)
            if value != p.default:
                parts.append(f"{p.name}={_show(value)}")
        s = f"({','.join(parts)})" if parts else ""
        return f"{self.name}{s}" + (f"@{_num(self.k)}" if self.k is not None else "")

    def definition(self) -> str:
        d = self.spec
        k = self.k
        gains = self.get("gains")
        values = {
            "k": _num(k) if k is not None else "", "rel": self.rel, "in_k": f" in the top {k}" if k is not None else "",
            "top_k": f" top {k}" if k is not None else " list", "shown": f"min({k}, results returned)"
            if k is not None else "the results returned",
            "ideal_cut": f", cut at {k}" if k is not None else "",
            "gain_text": ("2^grade - 1" if self.gain == "exp" else
                          "grade" + (f", levels {gains} replaced" if gains else "")),
            "trec_name": self.trec_name() or "-",
            "setp_text": "relevant retrieved / min(retrieved, relevant)" if self.get("relative")
            else "relevant retrieved / retrieved",
            "numret_text": "retrieved documents" if self.rel is None
            else f"relevant retrieved documents (grade >= {self.rel})",
            "cut_text": "(long)(level R + 0.9) (trec_eval 9, pytrec_eval)" if self.get("cut") == "v9"
            else "lround(level R) (trec_eval 10)",
            "rbp_gain": f"gain 1 for grade >= {self.rel}, else 0" if self.rel is not None
            else "gain = grade, scaled to [0, 1] by the query's top grade when it is above 1 (trec_eval rbp)",
            **{p.name: _show(self.get(p.name)) for p in d.params},
        }
        return f"{d.text.format(**values)} [{d.source}]"

    def trec_name(self) -> str | None:
        """trec_eval's name of this measure as its output prints it (None: trec_eval has none)."""
        d = self.spec
        if self.name == "RR" and self.k is not None:
            return None
        if self.name == "NumRet" and self.rel is not None:
            return "num_rel_ret"
        if self.name == "SetP" and self.get("relative"):
            return "set_relative_P"
        if self.name == "nDCG" and (self.gain == "exp" or (self.get("gains") and self.k is not None)):
            return None
        if self.name in ("RBP", "rbp_resid"):
            if self.name == "RBP" and self.rel is not None:
                return None
            p = float(self.get("p"))
            return d.trec if p == 0.9 else f"{d.trec}_p={_num(p)}"
        template = d.trec_cut if (self.k is not None and d.trec_cut) else d.trec
        if template is None:
            return None
        name = template.format(k=self.k) if "{k" in template else template
        if self.get("cut") == "v9":
            return None  # trec_eval 10 has no such variant
        extra = [p for p in d.params if p.name not in ("dcg", "relative") and self.get(p.name) != p.default]
        if self.name == "utility" and extra:
            extra = [p for p in d.params if p.name in "abcd"] + [p for p in extra if p.name == "n_docs"]
        if extra:
            name += "_" + ",".join(_trec_param(self.get(p.name)) for p in extra)
        return name


def _trec_param(value: Any) -> str:
    if isinstance(value, dict):
        return ",".join(f"{k}={_num(v)}" for k, v in sorted(value.items()))
    if isinstance(value, tuple):
        return ",".join(_num(v) for v in value)
    return _num(value) if isinstance(value, float) else str(value)


def _num(x: int | float) -> str:
    return str(x) if isinstance(x, int) else f"{x:g}"


def _show(value: Any) -> str:
    if isinstance(value, dict):
        return "{" + ",".join(f"{k}:{_num(v)}" for k, v in sorted(value.items())) + "}"
    if isinstance(value, tuple):
        return "(" + ",".join(_num(v) for v in value) + ")"
    if isinstance(value, float):
        return _num(value)
    return str(value)


# ---- parsing: ir_measures syntax -------------------------------------------------------------

_SYNTAX = re.compile(r"^\s*(?P<name>[A-Za-z0-9_]+)\s*(?:\((?P<params>.*)\))?\s*(?:@\s*(?P<k>[0-9.]+))?\s*$")
_PARAM = re.compile(r"^\s*(?P<key>\w+)\s*=\s*(?P<val>.+?)\s*$")


def _split_params(text: str) -> list[str]:
    """Split ``a=1, gains={1:3,2:9}`` at the commas outside braces and parentheses."""
    parts, depth, cur = [], 0, ""
    for ch in text:
        if ch in "{(":
            depth += 1
        elif ch in "})":
            depth -= 1
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    if cur.strip():
        parts.append(cur)
    return parts


def _value(kind: str, raw: str, text: str, key: str) -> Any:
    v = raw.strip().strip("'\"")
    try:
        if kind == "int":
            return int(v)
        if kind == "float":
            return float(v)
        if kind == "bool":
            if v.lower() in ("true", "1"):
                return True
            if v.lower() in ("false", "0"):
                return False
            raise ValueError(v)
        if kind == "gains":
            body = v.strip("{}")
            pairs = [p.split(":" if ":" in p else "=") for p in body.split(",") if p.strip()]
            return {int(a): float(b) for a, b in pairs}
        if kind == "floats":
            return tuple(float(x) for x in v.strip("()[]").split(",") if x.strip())
    except (ValueError, TypeError):
        raise ValidationError(f"Measure {text!r}: cannot read {key}={raw.strip()}.") from None
    return v


def _names_help() -> str:
    return ("use ir_measures names (nDCG@10, nDCG(dcg='exp-log2')@10, AP, AP@k, RR (or MRR), P@k, R@k, Success@k, Bpref, "
            "Judged@k, Rprec, SetP, SetR, SetF, SetAP, NumQ, NumRet, NumRel, IPrec@0.1, infAP, ERR@k, RBP(p=0.8); "
            "add rel=2 in parentheses for a binary threshold), the trec_eval measures ir_measures lacks (gm_map, "
            "gm_bpref, Rprec_mult@0.2, 11pt_avg, relative_P@k, utility, binG, G, ndcg_rel, Rndcg, rbp_resid, "
            "unj@k, num_nonrel_judged_ret), or trec_eval names (map, P_10, ndcg_cut.5,10, all_trec, official)")


def parse_measure(text: str, *, rel: int | None = None) -> Measure:
    """One measure in ir_measures syntax (``rel``: the relevance threshold of measures that
    take one and do not say, like trec_eval's ``-l``). trec_eval names that mean exactly
    one measure (``map``, ``P_10``) are accepted too; :func:`parse_measures` also expands
    lists (``P.5,10``, ``all_trec``)."""
    ms = parse_measures([text], rel=rel)
    if len(ms) != 1:
        raise ValidationError(f"Measure {text!r} names {len(ms)} measures; give one.")
    return ms[0]


def _parse_ir(text: str, rel: int | None, exact: bool = True) -> Measure | None:
    m = _SYNTAX.match(text or "")
    if not m:
        return None
    d = REGISTRY.get(ALIASES.get(m["name"], m["name"])) if exact else _BY_LOWER.get(m["name"].lower())
    if d is None:
        return None
    k: int | float | None = None
    if m["k"]:
        try:
            k = int(m["k"]) if d.cutoff_kind == "int" else float(m["k"])
        except ValueError:
            raise ValidationError(f"Measure {text!r}: the cutoff must be a whole number.") from None
        if d.cutoff_kind == "int" and k < 1:
            raise ValidationError(f"Measure {text!r}: the cutoff must be at least 1.")
        if d.cutoff_kind == "float" and k < 0:
            raise ValidationError(f"Measure {text!r}: the level must be 0 or more.")
    if d.cutoff == "required" and k is None:
        raise ValidationError(f"Measure {text!r} needs a cutoff, e.g. {d.name}@{'0.5' if d.cutoff_kind == 'float' else 10}.")
    if d.cutoff == "none" and k is not None:
        raise ValidationError(f"Measure {text!r}: {d.name} takes no cutoff.")
    level = d.rel if (rel is None or not d.uses_rel or d.rel is None) else rel
    gain, params = "linear", {}
    for part in _split_params(m["params"] or ""):
        pm = _PARAM.match(part)
        if not pm:
            raise ValidationError(f"Measure {text!r}: cannot read parameter {part.strip()!r}.")
        key, val = pm["key"], pm["val"]
        if key == "rel" and d.uses_rel:
            level = _value("int", val, text, key)
            if level < 0:
                raise ValidationError(f"Measure {text!r}: rel must be 0 or more.")
            continue
        p = d.param(key)
        if p is None:
            raise ValidationError(f"Measure {text!r}: unsupported parameter {key}={val.strip()}.")
        value = _value(p.kind, val, text, key)
        if p.choices and value not in p.choices:
            raise ValidationError(f"Measure {text!r}: {key} is one of {', '.join(p.choices)}.")
        if key == "dcg":
            gain = "exp" if value == "exp-log2" else "linear"
            continue
        if key == "p" and not 0 < value <= 1:
            raise ValidationError(f"Measure {text!r}: p is a persistence in (0, 1].")
        if value != p.default:
            params[key] = value
    order = [p.name for p in d.params]
    return Measure(d.name, k, level, gain, tuple(sorted(params.items(), key=lambda kv: order.index(kv[0]))))


# ---- parsing: trec_eval syntax ---------------------------------------------------------------

# trec_eval name -> (our measure, how its parameter list is read, trec_eval's default list)
_TREC: dict[str, tuple[str, str, tuple]] = {
    "num_q": ("NumQ", "", ()), "num_ret": ("NumRet", "", ()), "num_rel": ("NumRel", "", ()),
    "num_rel_ret": ("NumRet", "rel", ()), "map": ("AP", "", ()), "gm_map": ("gm_map", "", ()),
    "Rprec": ("Rprec", "", ()), "bpref": ("Bpref", "", ()), "recip_rank": ("RR", "", ()),
    "iprec_at_recall": ("IPrec", "cut_float", RECALL_LEVELS), "P": ("P", "cut", TREC_CUTOFFS),
    "recall": ("R", "cut", TREC_CUTOFFS), "infAP": ("infAP", "", ()), "gm_bpref": ("gm_bpref", "", ()),
    "Rprec_mult": ("Rprec_mult", "cut_float", RPREC_MULTS), "utility": ("utility", "abcd", ()),
    "11pt_avg": ("11pt_avg", "levels", ()), "binG": ("binG", "", ()), "G": ("G", "gains", ()),
    "ndcg": ("nDCG", "gains", ()), "ndcg_rel": ("ndcg_rel", "gains", ()), "Rndcg": ("Rndcg", "gains", ()),
    "ndcg_cut": ("nDCG", "cut", TREC_CUTOFFS), "map_cut": ("AP", "cut", TREC_CUTOFFS),
    "relative_P": ("relative_P", "cut", TREC_CUTOFFS), "success": ("Success", "cut", (1, 5, 10)),
    "set_P": ("SetP", "", ()), "set_relative_P": ("SetP", "relative", ()), "set_recall": ("SetR", "", ()),
    "set_map": ("SetAP", "", ()), "set_F": ("SetF", "beta", ()),
    "num_nonrel_judged_ret": ("num_nonrel_judged_ret", "", ()), "rbp": ("RBP", "p", ()),
    "rbp_resid": ("rbp_resid", "p", ()), "unj": ("unj", "cut", (5, 10, 20)),
}
TREC_TEXT_MEASURES = ("runid", "relstring")  # trec_eval prints these as text, not numbers
TREC_NICKNAMES: dict[str, tuple[str, ...]] = {
    "official": ("num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref", "recip_rank",
                 "iprec_at_recall", "P"),
    "all_trec": ("num_q", "num_ret", "num_rel", "num_rel_ret", "map", "gm_map", "Rprec", "bpref", "recip_rank",
                 "iprec_at_recall", "P", "recall", "infAP", "gm_bpref", "Rprec_mult", "utility", "11pt_avg",
                 "binG", "G", "ndcg", "ndcg_rel", "Rndcg", "ndcg_cut", "map_cut", "relative_P", "success", "set_P",
                 "set_relative_P", "set_recall", "set_map", "set_F", "num_nonrel_judged_ret", "rbp", "rbp_resid",
                 "unj"),
    "set": ("num_q", "num_ret", "num_rel", "num_rel_ret", "utility", "set_P", "set_recall", "set_relative_P",
            "set_map", "set_F"),
}
_TREC_BASES = sorted(_TREC, key=len, reverse=True)


def _trec_float(x: str) -> float:
    return float(x)


def _trec_long(x: str) -> int:
    return int(float(x))  # trec_eval reads cutoffs with atol: "23.4" is 23


def parse_trec_eval(text: str, *, rel: int | None = None) -> list[Measure] | None:
    """trec_eval's measure syntax, as given to ``-m`` (``P.5,10``, ``ndcg.1=3,2=9``,
    ``iprec_at_recall..1,.5``, ``all_trec``) or as its output prints names (``P_10``,
    ``iprec_at_recall_0.10``, ``utility_2,-1,0,0``): the measures it means, or None when
    ``text`` is not a trec_eval name. ``rel`` is trec_eval's ``-l``."""
    s = (text or "").strip()
    if s in TREC_NICKNAMES:
        return [m for name in TREC_NICKNAMES[s] for m in parse_trec_eval(name, rel=rel) or []]
    if s in TREC_TEXT_MEASURES or s.split(".")[0].split("_")[0] in TREC_TEXT_MEASURES:
        raise ValidationError(f"trec_eval's {s!r} is text, not a number; golden score does not compute it.")
    base = args = None
    for b in _TREC_BASES:
        if s == b:
            base, args = b, None
            break
        if s.startswith(b + ".") or s.startswith(b + "_"):
            base, args = b, s[len(b) + 1:]
            break
    if base is None:
        return None
    ours, how, defaults = _TREC[base]
    level = rel if rel is not None else 1
    d = REGISTRY[ours]
    m_rel = level if (how == "rel" or (d.uses_rel and d.rel is not None)) else d.rel
    try:
        if how in ("cut", "cut_float"):
            conv = _trec_long if how == "cut" else _trec_float
            ks = [conv(x) for x in args.split(",") if x.strip()] if args else list(defaults)
            return [Measure(ours, k, rel=m_rel) for k in sorted(set(ks))]
        params: dict[str, Any] = {}
        if args:
            if how == "abcd":
                params = dict(zip("abcd", (float(x) for x in args.split(","))))
            elif how == "levels":
                params = {"levels": tuple(float(x) for x in args.split(",") if x.strip())}
            elif how == "gains":
                gains = {}
                for pair in args.split(","):
                    a, _, b = pair.partition("=")
                    if a.strip().lstrip("-").isdigit():
                        gains[int(a)] = float(b)
                params = {"gains": gains}
            elif how == "beta":
                params = {"beta": float(args.split(",")[0])}
            elif how == "p":
                for pair in args.split(","):
                    a, _, b = pair.partition("=")
                    if a.strip() == "p":
                        params["p"] = float(b)
            else:
                raise ValueError(args)
        if how == "relative":
            params = {"relative": True}
        if ours in ("RBP", "rbp_resid") and "p" not in params:
            params["p"] = 0.9  # trec_eval's default persistence
        if ours == "RBP":
            m_rel = None  # trec_eval rbp: graded gains
        order = [p.name for p in d.params]
        kept = {k: v for k, v in params.items() if (p := d.param(k)) is not None and v != p.default}
        return [Measure(ours, None, rel=m_rel,
                        params=tuple(sorted(kept.items(), key=lambda kv: order.index(kv[0]))))]
    except (ValueError, TypeError):
        raise ValidationError(f"trec_eval measure {text!r}: cannot read its parameters {args!r}.") from None


def parse_measures(texts: Iterable[str | Measure], *, rel: int | None = None) -> list[Measure]:
    """Measures from names in ir_measures or trec_eval syntax (see the module docstring),
    in order, each once. ``rel``: the threshold for measures that take one and do not say."""
    out: list[Measure] = []
    for t in texts:
        if isinstance(t, Measure):
            ms = [t]
        else:
            ms = _parse_one(t, rel)
        for m in ms:
            if m not in out:
                out.append(m)
    return out


def _parse_one(text: str, rel: int | None) -> list[Measure]:
    """ir_measures names first (exact spelling); a bare trec_eval list name (``P``,
    ``success``) that ir_measures would need a cutoff for expands to trec_eval's defaults;
    then trec_eval syntax; then ir_measures names in any letter case."""
    try:
        one = _parse_ir(text, rel)
    except ValidationError:
        if text.strip() in _TREC:
            return parse_trec_eval(text, rel=rel) or []
        raise
    if one is not None:
        return [one]
    ms = parse_trec_eval(text, rel=rel)
    if ms is not None:
        return ms
    one = _parse_ir(text, rel, exact=False)
    if one is not None:
        return [one]
    raise ValidationError(f"Unknown measure {text!r}: {_names_help()}.")
