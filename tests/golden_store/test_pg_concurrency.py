"""Several OS processes writing labels to one PostgreSQL store at once (issue 16's team case).

Each process plays the labeling service: a label carries a client-made id; the write checks
the receipt and appends the grade event and its receipt in one transaction (the same
``label_receipts`` functions the labeling surface uses). The processes send overlapping
label ids (a label re-sent by another app process) at the same time. What must hold: every
label written exactly once (0 lost, 0 duplicated), every event id distinct, and nothing
failed: serialization conflicts were retried by ``Store.write``.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

WORKER = textwrap.dedent("""
    import sys
    from golden_store import label_receipts
    from golden_store.store import Store, utcnow

    url, me, first, last = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    written = 0
    with Store.open(url) as store:
        for k in range(first, last):
            label_id = f"label-{k:05d}"
            item = {"query_id": f"q{k % 7}", "doc_id": "d1", "start": k, "end": k + 5}

            def write(cur):
                if label_receipts.find(cur, label_id) is not None:
                    return 0
                event_id = cur.execute(
                    "INSERT INTO grade_events (query_id, doc_id, start, \\"end\\", op, grade, actor, created_at) "
                    "VALUES (?, 'd1', ?, ?, 'grade', ?, ?, ?) RETURNING event_id",
                    [item["query_id"], k, k + 5, k % 4, f"annotator{k % 20}", utcnow()]).fetchone()[0]
                label_receipts.add(cur, label_id, actor=f"annotator{k % 20}", surface="judging", item=item,
                                   action="grade", event_id=event_id)
                return 1

            written += store.write(write)
    print(written)
""")


def test_three_processes_label_at_once_nothing_lost_or_duplicated(pg_store):
    n, per = 3, 200  # process i sends labels [i*100, i*100 + 200): every label but the ends twice
    root = Path(__file__).resolve().parents[2]
    env = dict(os.environ, PYTHONPATH=str(root))
    procs = [subprocess.Popen([sys.executable, "-c", WORKER, pg_store.url, f"p{i}", str(i * 100), str(i * 100 + per)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
             for i in range(n)]
    outs = [p.communicate(timeout=300) for p in procs]
    for p, (out, err) in zip(procs, outs):
        assert p.returncode == 0, err
    expected = (n - 1) * 100 + per  # distinct label ids sent
    assert sum(int(out) for out, _ in outs) == expected  # each label written by exactly one process
    assert pg_store.read_one("SELECT count(*), count(DISTINCT event_id) FROM grade_events") == (expected, expected)
    assert pg_store.read_one("SELECT count(*), count(DISTINCT label_id) FROM label_receipts") == (expected, expected)
    assert pg_store.read_one(
        "SELECT count(*) FROM label_receipts r JOIN grade_events g USING (event_id) WHERE g.start = "
        "CAST(substr(r.label_id, 7) AS INTEGER)")[0] == expected
