"""Reading judgments people already have (issue 28): TREC qrels, BEIR TSV and Label Studio
exports, each refused with the file and line (or task) named when it is wrong."""

from __future__ import annotations

import json

import pytest

from golden_store.core import judgment_formats as jf
from golden_store.core.errors import ValidationError


def test_trec_reads_crlf_blank_lines_comments_and_leaves_negatives_out():
    text = "# from NIST\r\n301 0 FT-1 2\r\n\r\n301 0 FT-2 0\r\n302 Q0 FT-3 -1\r\n302 0 FT-4 -2\r\n303 0 FT-5 3\r\n"
    p = jf.parse_trec("q.trec", text)
    assert p.query_ids == ["301", "301", "303"] and p.doc_ids == ["FT-1", "FT-2", "FT-5"]
    assert p.grades == [2, 0, 3] and p.refs == [2, 4, 7] and p.negative == 2
    assert p.where(2) == "q.trec line 7"


def test_trec_negative_and_above_scale_grades_follow_the_map():
    text = "1 0 a 4\n1 0 b -2\n1 0 c 1\n"
    with pytest.raises(ValidationError) as exc:
        jf.parse_trec("q.trec", text)
    assert "q.trec line 1" in str(exc.value) and "above the studio's 0-3 scale" in str(exc.value)
    assert "--map '4=3'" in str(exc.value)
    p = jf.parse_trec("q.trec", text, jf.parse_map("4=3, -2=0"))
    assert p.grades == [3, 0, 1] and p.negative == 0


def test_trec_bad_lines_are_all_named_with_their_line_numbers():
    text = "1 0 a 1\n1 0 b\n1 0 c x\n1 0 d 1.5\n1 0 e 02\n"
    with pytest.raises(ValidationError) as exc:
        jf.parse_trec("q.trec", text)
    msg = str(exc.value)
    assert "4 bad line(s)" in msg and "nothing was imported" in msg
    for line, says in ((2, "expected 4 fields"), (3, "the grade 'x' is not an integer"),
                       (4, "the grade '1.5' is not an integer"), (5, "the grade '02' is not an integer")):
        assert f"q.trec line {line}: {says}" in msg, msg
    assert "line 1:" not in msg


def test_beir_needs_its_header_and_reads_tabs_crlf_and_blank_lines():
    p = jf.parse_beir("qrels/test.tsv", "query-id\tcorpus-id\tscore\r\nq1\tdoc 1\t1\r\n\r\nq2\td2\t0\r\n")
    assert p.query_ids == ["q1", "q2"] and p.doc_ids == ["doc 1", "d2"] and p.refs == [2, 4]
    with pytest.raises(ValidationError, match=r"test.tsv line 1: a BEIR qrels file starts with the header"):
        jf.parse_beir("test.tsv", "q1\td1\t1\n")
    with pytest.raises(ValidationError) as exc:
        jf.parse_beir("test.tsv", "query-id\tcorpus-id\tscore\nq1\td1\n\nq2\td2\t7\n")
    assert "test.tsv line 2: expected 3 tab-separated fields" in str(exc.value)
    assert "test.tsv line 4: the grade 7 is above" in str(exc.value)


def test_format_is_told_from_the_content():
    assert jf.detect_format("a", "# c\n\n301 0 d 1\n") == "trec"
    assert jf.detect_format("a", "query-id\tcorpus-id\tscore\n") == "beir"
    assert jf.detect_format("a", "  [{\"id\": 1, \"data\": {}, \"annotations\": []}]") == "labelstudio"
    with pytest.raises(ValidationError, match="first record has keys id, which is not a judgments export"):
        jf.detect_format("a", "  [{\"id\": 1}]")  # a list of something else: named by its keys
    with pytest.raises(ValidationError, match="a line 2: cannot tell"):
        jf.detect_format("a", "\nhello there\n")
    with pytest.raises(ValidationError, match="holds no judgments"):
        jf.parse("a", "# only\n", None)


def _task(tid, value, *, kind="choices", data=None, extra_annotations=(), cancelled=False, from_name="relevance"):
    """A task as Label Studio's JSON export writes it (the fields it carries, trimmed)."""
    result = {"id": f"r{tid}", "type": kind, "from_name": from_name, "to_name": "passage", "origin": "manual",
              "value": {"choices": [value]} if kind == "choices" else {"rating": value}}
    ann = {"id": 100 + tid, "completed_by": 1, "result": [result], "was_cancelled": cancelled, "ground_truth": False,
           "created_at": "2026-11-02T10:11:12.000000Z", "lead_time": 7.5, "task": tid}
    return {"id": tid, "data": data or {"query_id": "q1", "query": "How long is the refund window?",
                                        "passage": "Refunds are accepted within 30 days."},
            "annotations": [ann, *extra_annotations], "predictions": [], "meta": {}, "project": 3,
            "created_at": "2026-11-01T09:00:00.000000Z", "updated_at": "2026-11-02T10:11:12.000000Z"}


def test_label_studio_choices_ratings_defaults_and_map():
    tasks = [_task(1, "Fully answers"), _task(2, 2, kind="rating"), _task(3, "Relevant"),
             {"id": 4, "data": {"query": "x", "passage": "y"}, "annotations": []}]
    with pytest.raises(ValidationError) as exc:
        jf.parse_labelstudio("ls.json", json.dumps(tasks))
    assert "ls.json task 3: the choice 'Relevant' has no grade" in str(exc.value)
    assert "--map 'Relevant=2'" in str(exc.value)
    p = jf.parse_labelstudio("ls.json", json.dumps(tasks), jf.parse_map("relevant=2"))
    assert p.grades == [3, 1, 2] and p.refs == [1, 2, 3] and p.unlabeled == 1
    assert p.query_ids == ["q1"] * 3 and p.passages[0] == "Refunds are accepted within 30 days."
    assert p.where(1) == "ls.json task 2"


def test_label_studio_disagreeing_annotations_and_two_controls_are_refused_by_task():
    other = _task(5, "Irrelevant")["annotations"][0]
    cancelled = _task(6, "Irrelevant", cancelled=True)["annotations"][0]
    two = _task(7, "Fully answers")
    two["annotations"][0]["result"].append({**two["annotations"][0]["result"][0], "from_name": "other"})
    tasks = [_task(5, "Fully answers", extra_annotations=[other]), _task(6, "Fully answers",
                                                                          extra_annotations=[cancelled]), two]
    with pytest.raises(ValidationError) as exc:
        jf.parse_labelstudio("ls.json", json.dumps(tasks))
    msg = str(exc.value)
    assert "ls.json task 5: its 2 annotations disagree (3, 0)" in msg
    assert "task 6" not in msg  # a cancelled annotation does not count
    assert "ls.json task 7: 2 choices/rating results (other, relevance); pass --from-name" in msg
    p = jf.parse_labelstudio("ls.json", json.dumps(tasks[1:]), fields=jf.LabelStudioFields(from_name="relevance"))
    assert p.grades == [3, 3]


def test_label_studio_bad_json_names_the_line_and_missing_fields_name_the_key():
    with pytest.raises(ValidationError, match=r"ls.json line 2: not valid JSON"):
        jf.parse_labelstudio("ls.json", '[\n{"id": 1,,}]')
    t = _task(9, "Fully answers", data={"query": "q?", "text": "passage"})
    with pytest.raises(ValidationError, match=r"ls.json task 9: no passage text in data.passage"):
        jf.parse_labelstudio("ls.json", json.dumps([t]))
    p = jf.parse_labelstudio("ls.json", json.dumps([t]), fields=jf.LabelStudioFields(passage="text"))
    assert p.query_ids == [None] and p.query_texts == ["q?"]


def test_actors_of_imports_are_never_usernames():
    from annotator.people.identity import _USERNAME_RE  # a person's username: no ':'

    assert jf.source_actor("qrels.trec", None) == "import:qrels.trec"
    assert jf.source_actor("a,b:c.tsv", None) == "import:a_b_c.tsv"
    assert jf.source_actor("x", "NIST assessors") == "assessor:NIST assessors"
    for actor in ("import:qrels.trec", "assessor:NIST assessors"):
        assert jf.is_imported_actor(actor) and not _USERNAME_RE.match(actor)
    assert not jf.is_imported_actor("cli:root") and not jf.is_imported_actor("ann1")
    assert jf.shown_actor("import:qrels.trec") == "imported (qrels.trec)"
    assert jf.shown_actor("assessor:NIST") == "imported (assessor NIST)"
    assert jf.shown_actor("ann1") == "ann1"
    with pytest.raises(ValidationError, match="--source"):
        jf.source_actor("x", "a:b")
    with pytest.raises(ValidationError, match="the grade must be 0, 1, 2 or 3"):
        jf.parse_map("Relevant=5")
    with pytest.raises(ValidationError, match="is not VALUE=GRADE"):
        jf.parse_map("Relevant")
