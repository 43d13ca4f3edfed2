"""The package surface: every public scorer importable from ``golden_store.scoring`` (listed
in ``__all__``, with a documented result type), loaded lazily."""

from __future__ import annotations

import subprocess
import sys
import typing

import golden_store.scoring as scoring


def test_every_public_scorer_is_exported():
    names = set(scoring.__all__)
    for required in ("cohens_kappa", "krippendorff_alpha", "reliability", "fit_isotonic", "pick_band",
                     "judge_report", "Nugget", "nugget_scores", "evaluate", "evaluate_trec", "paired_bootstrap",
                     "compare_runs", "chunking_report", "EvalResult", "Measure", "parse_measure"):
        assert required in names, required
    for name in scoring.__all__:
        assert getattr(scoring, name) is not None, name
    # nothing public in a scorer module is forgotten (constants and helpers with generic
    # names stay in their modules, as the package docstring says)
    skip = {"split", "group", "by", "over_time", "drift", "distributions", "evidence", "evidence_pairs"}
    for module in ("abstention", "agreement", "calibration", "generation", "retrieval", "stats", "tokens", "trec", "golden"):
        mod = __import__(f"golden_store.scoring.{module}", fromlist=["x"])
        for name, obj in vars(mod).items():
            if name.startswith("_") or name in skip or not callable(obj) or getattr(obj, "__module__", "") != mod.__name__:
                continue
            assert name in names or name in {"relevant_set", "dedupe", "qrels_from_mapping", "r_key_of"}, (module, name)


def test_functions_returning_plain_data_name_their_result_type():
    for name in ("judge_report", "graded_report", "reliability", "pick_band", "cascade_report", "length_bias", "position_bias",
                 "nugget_scores", "abstention_scores", "citation_scores", "movement_breakdown", "token_metrics",
                 "compare_runs", "per_class"):
        fn = getattr(scoring, name)
        hint = typing.get_type_hints(fn)["return"]
        origin = typing.get_origin(hint)
        target = typing.get_args(hint)[1] if origin is dict else hint
        assert typing.is_typeddict(target), (name, hint)
        assert target.__doc__ or name == "per_class", name


def test_import_golden_store_does_not_load_the_scorers():
    code = ("import sys, golden_store, golden_store.scoring as s; "
            "heavy = [m for m in ('golden_store.scoring.trec', 'golden_store.scoring.calibration', "
            "'golden_store.scoring.stats', 'sklearn', 'pytrec_eval') if m in sys.modules]; "
            "print(heavy); s.reliability; print('golden_store.scoring.calibration' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split("\n")
    assert out[0] == "[]" and out[1] == "True"
