"""The live store's schema, as an ordered list of forward migrations.

Design: every human act is a row appended to an ``*_events`` table (who, when, under which
rubric version, what value); nothing is updated in place. Current state is a view that
takes the latest event per key. One global sequence orders all events, so "latest" is
well defined even when two events share a timestamp.

Add a migration by appending to ``MIGRATIONS``; never edit one that has shipped.
The resulting schema, readable in one place, is ``golden_store/db/schema_snapshot.sql``;
after adding a migration regenerate it with ``python -m golden_store.db.schema_snapshot``
(a test fails while it is stale).
"""

from __future__ import annotations

from dataclasses import dataclass

BUILTIN_STRATA: dict[str, str] = {
    "lexical": "Contains an exact code, name, SKU or error string (stresses BM25, the analyzer).",
    "paraphrase": "The answer shares few content words with the question (stresses dense retrieval).",
    "multi_hop": "The answer needs two or more spans, usually in different documents.",
    "long_tail": "Asks about an entity that appears fewer than 3 times in the corpus.",
    "tabular": "The answer lives in a table or figure (stresses the parser).",
    "negative": "The corpus genuinely does not contain the answer (stresses abstention).",
    "temporal": "The correct answer depends on recency; it changed over time.",
}


@dataclass(frozen=True)
class Migration:
    version: int
    description: str
    statements: tuple[str, ...]


# ---- what more than one migration says: a table a later migration rebuilds, a view it redefines ----
# Written once here, so the rebuilt table cannot drift from the one it replaces by a copying slip.
# Each migration still runs exactly the statements it shipped with.

def _rebuilt(table: str, old_name: str, create: str, copy: str) -> tuple[str, ...]:
    """Rebuild ``table`` under a new definition, keeping every row: DuckDB cannot add a column
    with a CHECK or drop a primary key in place. The old table steps aside as ``old_name``,
    ``create`` makes the new one, ``copy`` moves the rows, the old one goes."""
    return (f"ALTER TABLE {table} RENAME TO {old_name}", create, copy, f"DROP TABLE {old_name}")


# pool_sources: which runs put an item in the pool (v3 with a primary key; v16 without it).
_POOL_SOURCES_COLUMNS = """query_id VARCHAR NOT NULL,
        doc_id VARCHAR NOT NULL,
        start INTEGER NOT NULL,
        "end" INTEGER NOT NULL,
        system VARCHAR NOT NULL,
        rank INTEGER NOT NULL"""

# answers: a system's answer to a question (v5; v18 rebuilds it with an outcome column).
_ANSWERS_COLUMNS = """system VARCHAR NOT NULL,
        query_id VARCHAR NOT NULL,
        answer VARCHAR NOT NULL,
        imported_at TIMESTAMP NOT NULL,
        imported_by VARCHAR NOT NULL"""


def _transcript_review_events(table: str, key: str, verdicts: tuple[str, ...]) -> str:
    """A reviewer's verdict on a failure transcript (v12 as ``run_id`` keyed; v22 rebuilds it,
    keyed by ``evaluation_id`` since v15, to allow the verdict 'no_failure')."""
    allowed = ", ".join(f"'{v}'" for v in verdicts)
    return f"""CREATE TABLE {table} (
        event_id BIGINT PRIMARY KEY DEFAULT nextval('event_seq'),
        {key} VARCHAR NOT NULL,
        query_id VARCHAR NOT NULL,
        trial INTEGER NOT NULL,
        verdict VARCHAR NOT NULL CHECK (verdict IN ({allowed})),
        failure_class VARCHAR,
        note VARCHAR,
        actor VARCHAR NOT NULL,
        created_at TIMESTAMP NOT NULL,
        rubric_version INTEGER
    )"""


def _current_transcript_reviews(key: str) -> str:
    """Each transcript's latest review, withdrawn ones left out (v12; v15 renames the key,
    v22 rebuilds the table under it)."""
    return f"""CREATE VIEW current_transcript_reviews AS
        SELECT {key}, query_id, trial, verdict, failure_class, note, actor, created_at, event_id FROM (
            SELECT *, row_number() OVER (PARTITION BY {key}, query_id, trial ORDER BY event_id DESC) AS rn
            FROM transcript_review_events
        ) WHERE rn = 1 AND verdict <> 'withdrawn'"""


def _queries_view(*appended: str) -> str:
    """The live questions: each one's latest revision, retired ones left out, by DISTINCT ON
    (v17; v20 appends ``tier``: PostgreSQL replaces a view only by appending columns)."""
    tail = "".join(f", {column}" for column in appended)
    return f"""CREATE OR REPLACE VIEW queries AS
        SELECT query_id, text, stratum, answerable, source, created_date, held_out, notes,
               generator_model, generator_prompt_sha,
               actor AS last_edited_by, created_at AS last_edited_at, event_id AS revision{tail}
        FROM (
            SELECT DISTINCT ON (query_id) * FROM query_revisions ORDER BY query_id, event_id DESC
        ) AS latest WHERE NOT retired"""


_V1 = (
    """CREATE TABLE store_meta (key VARCHAR PRIMARY KEY, value VARCHAR NOT NULL)""",
    """CREATE SEQUENCE event_seq START 1""",
    # ---- corpus -------------------------------------------------------------------------
    """CREATE TABLE documents (
        doc_id VARCHAR PRIMARY KEY,
        title VARCHAR,
        source_path VARCHAR,
        source_format VARCHAR NOT NULL,
        raw_text VARCHAR NOT NULL,
        canonical_text VARCHAR NOT NULL,
        raw_sha256 VARCHAR NOT NULL,
        canonical_sha256 VARCHAR NOT NULL,
        imported_at TIMESTAMP NOT NULL,
        imported_by VARCHAR NOT NULL
    )""",
    # The documents table holds the current corpus; this log keeps what was replaced, so a
    # corpus change is never silent.
    """CREATE TABLE corpus_events (
        event_id BIGINT PRIMARY KEY DEFAULT nextval('event_seq'),
        doc_id VARCHAR NOT NULL,
        action VARCHAR NOT NULL CHECK (action IN ('add', 'replace')),
        old_canonical_sha256 VARCHAR,
        new_canonical_sha256 VARCHAR NOT NULL,
        source_path VARCHAR,
        actor VARCHAR NOT NULL,
        created_at TIMESTAMP NOT NULL
    )""",
    # ---- queries --------------------------------------------------------------------------
    """CREATE TABLE strata (
        name VARCHAR PRIMARY KEY,
        description VARCHAR NOT NULL,
        builtin BOOLEAN NOT NULL,
        created_at TIMESTAMP NOT NULL,
        created_by VARCHAR NOT NULL
    )""",
    # A query edit is a new revision; retiring a query is a revision with retired = true.
    """CREATE TABLE query_revisions (
        event_id BIGINT PRIMARY KEY DEFAULT nextval('event_seq'),
        query_id VARCHAR NOT NULL,
        text VARCHAR NOT NULL,
        stratum VARCHAR NOT NULL,
        answerable BOOLEAN NOT NULL,
        source VARCHAR NOT NULL,
        created_date DATE NOT NULL,
        held_out BOOLEAN NOT NULL,
        notes VARCHAR NOT NULL,
        retired BOOLEAN NOT NULL DEFAULT FALSE,
        -- for questions proposed by a model (source = synthetic): which model, which prompt
        generator_model VARCHAR,
        generator_prompt_sha VARCHAR,
        actor VARCHAR NOT NULL,
        created_at TIMESTAMP NOT NULL
    )""",
    """CREATE VIEW queries AS
        SELECT query_id, text, stratum, answerable, source, created_date, held_out, notes,
               generator_model, generator_prompt_sha,
               actor AS last_edited_by, created_at AS last_edited_at, event_id AS revision
        FROM (
            SELECT *, row_number() OVER (PARTITION BY query_id ORDER BY event_id DESC) AS rn
            FROM query_revisions
        ) WHERE rn = 1 AND NOT retired""",
    # ---- rubric ---------------------------------------------------------------------------
    """CREATE TABLE rubric_versions (
        version INTEGER PRIMARY KEY,
        text VARCHAR NOT NULL,
        sha256 VARCHAR NOT NULL,
        changelog VARCHAR NOT NULL,
        actor VARCHAR NOT NULL,
        created_at TIMESTAMP NOT NULL
    )""",
    # ---- label events (written by the workflows) --------------------------------------------
    # Evidence: a quote resolved to a span. op = 'set' (new or changed) | 'retract'.
    # start/end are offsets into documents.raw_text; canonical_* into canonical_text.
    """CREATE TABLE evidence_events (
        event_id BIGINT PRIMARY KEY DEFAULT nextval('event_seq'),
        query_id VARCHAR NOT NULL,
        evidence_id VARCHAR NOT NULL,
        op VARCHAR NOT NULL CHECK (op IN ('set', 'retract')),
        quote VARCHAR,
        doc_id VARCHAR,
        start INTEGER,
        "end" INTEGER,
        canonical_start INTEGER,
        canonical_end INTEGER,
        -- canonical sha256 of the document text the span was placed on: after a corpus
        -- change, a label on an older text is found, re-placed or listed as broken
        doc_sha256 VARCHAR,
        match_kind VARCHAR,
        score DOUBLE,
        actor VARCHAR NOT NULL,
        created_at TIMESTAMP NOT NULL,
        rubric_version INTEGER,
        round_id VARCHAR,
        note VARCHAR
    )""",
    # Graded relevance of a (query, passage) pair; a passage is a corpus span, never a chunk id.
    # op = 'grade' | 'retract' | 'skip' | 'unsure' | 'adjudicate' (a lead's final label).
    """CREATE TABLE grade_events (
        event_id BIGINT PRIMARY KEY DEFAULT nextval('event_seq'),
        query_id VARCHAR NOT NULL,
        doc_id VARCHAR NOT NULL,
        start INTEGER NOT NULL,
        "end" INTEGER NOT NULL,
        doc_sha256 VARCHAR,
        op VARCHAR NOT NULL CHECK (op IN ('grade', 'retract', 'skip', 'unsure', 'adjudicate')),
        grade SMALLINT CHECK (grade IS NULL OR grade BETWEEN 0 AND 3),
        CHECK ((op IN ('grade', 'adjudicate')) = (grade IS NOT NULL)),
        actor VARCHAR NOT NULL,
        created_at TIMESTAMP NOT NULL,
        rubric_version INTEGER,
        round_id VARCHAR,
        note VARCHAR
    )""",
    # Nuggets: atomic facts of a reference answer. op = 'add' | 'edit' | 'delete' | 'approve'.
    """CREATE TABLE nugget_events (
        event_id BIGINT PRIMARY KEY DEFAULT nextval('event_seq'),
        query_id VARCHAR NOT NULL,
        nugget_id VARCHAR NOT NULL,
        op VARCHAR NOT NULL CHECK (op IN ('add', 'edit', 'delete', 'approve')),
        text VARCHAR,
        importance VARCHAR CHECK (importance IS NULL OR importance IN ('vital', 'okay')),
        position INTEGER,
        quote VARCHAR,
        doc_id VARCHAR,
        start INTEGER,
        "end" INTEGER,
        doc_sha256 VARCHAR,
        actor VARCHAR NOT NULL,
        created_at TIMESTAMP NOT NULL,
        rubric_version INTEGER,
        model VARCHAR,
        prompt_sha VARCHAR
    )""",
    # Verdicts on other things (transcripts, judge outputs): kind names the workflow.
    """CREATE TABLE verdict_events (
        event_id BIGINT PRIMARY KEY DEFAULT nextval('event_seq'),
        kind VARCHAR NOT NULL,
        item_id VARCHAR NOT NULL,
        query_id VARCHAR,
        value VARCHAR NOT NULL,
        detail VARCHAR,
        note VARCHAR,
        actor VARCHAR NOT NULL,
        created_at TIMESTAMP NOT NULL,
        rubric_version INTEGER
    )""",
    # ---- current state, derived ----------------------------------------------------------------
    """CREATE VIEW current_evidence AS
        SELECT query_id, evidence_id, quote, doc_id, start, "end", canonical_start, canonical_end,
               doc_sha256, match_kind, score, actor, created_at, rubric_version, note, event_id
        FROM (
            SELECT *, row_number() OVER (PARTITION BY query_id, evidence_id ORDER BY event_id DESC) AS rn
            FROM evidence_events
        ) WHERE rn = 1 AND op = 'set'""",
    # Each annotator's current grade per (query, passage): their latest grade/retract event.
    """CREATE VIEW current_grades AS
        SELECT query_id, doc_id, start, "end", doc_sha256, actor, grade, rubric_version, round_id,
               note, created_at, event_id
        FROM (
            SELECT *, row_number() OVER (
                PARTITION BY query_id, doc_id, start, "end", actor ORDER BY event_id DESC) AS rn
            FROM grade_events WHERE op IN ('grade', 'retract')
        ) WHERE rn = 1 AND op = 'grade'""",
    # The golden label per (query, passage): the latest adjudication if there is one, else the
    # annotators' grade when they all agree. Disagreements without adjudication are left out
    # (they wait in the adjudication queue) and counted by `disputed_grades`.
    """CREATE VIEW final_grades AS
        WITH adj AS (
            SELECT query_id, doc_id, start, "end", grade, actor, rubric_version, created_at
            FROM (
                SELECT *, row_number() OVER (
                    PARTITION BY query_id, doc_id, start, "end" ORDER BY event_id DESC) AS rn
                FROM grade_events WHERE op = 'adjudicate'
            ) WHERE rn = 1
        ),
        agreed AS (
            SELECT query_id, doc_id, start, "end", min(grade) AS grade,
                   string_agg(DISTINCT actor, ',' ORDER BY actor) AS actor,
                   max(rubric_version) AS rubric_version, max(created_at) AS created_at
            FROM current_grades
            GROUP BY query_id, doc_id, start, "end"
            HAVING count(DISTINCT grade) = 1
        )
        SELECT query_id, doc_id, start, "end", grade, actor AS decided_by, rubric_version,
               created_at, 'adjudicated' AS basis FROM adj
        UNION ALL
        SELECT a.query_id, a.doc_id, a.start, a."end", a.grade, a.actor, a.rubric_version,
               a.created_at, 'agreed' AS basis
        FROM agreed a ANTI JOIN adj USING (query_id, doc_id, start, "end")""",
    """CREATE VIEW disputed_grades AS
        SELECT query_id, doc_id, start, "end", count(*) AS n_annotators,
               count(DISTINCT grade) AS n_distinct
        FROM current_grades
        GROUP BY query_id, doc_id, start, "end"
        HAVING count(DISTINCT grade) > 1""",
    # A nugget's content is its latest add/edit/delete; it is approved when an 'approve'
    # event came after that content (an edit after approval needs a fresh approval).
    """CREATE VIEW current_nuggets AS
        WITH content AS (
            SELECT *, row_number() OVER (
                PARTITION BY query_id, nugget_id ORDER BY event_id DESC) AS rn
            FROM nugget_events WHERE op IN ('add', 'edit', 'delete')
        ),
        approvals AS (
            SELECT query_id, nugget_id, max(event_id) AS approved_event
            FROM nugget_events WHERE op = 'approve' GROUP BY query_id, nugget_id
        )
        SELECT c.query_id, c.nugget_id, c.text, c.importance, c.position, c.quote, c.doc_id,
               c.start, c."end", c.actor, c.created_at, c.model, c.prompt_sha,
               coalesce(a.approved_event > c.event_id, FALSE) AS approved
        FROM content c LEFT JOIN approvals a USING (query_id, nugget_id)
        WHERE c.rn = 1 AND c.op <> 'delete'""",
    # ---- LLM calls: usage and cost of every request (never the key, never the prompt text) --
    """CREATE TABLE llm_calls (
        call_id BIGINT PRIMARY KEY DEFAULT nextval('event_seq'),
        purpose VARCHAR NOT NULL,
        item VARCHAR NOT NULL,
        model VARCHAR NOT NULL,
        prompt_sha VARCHAR NOT NULL,
        outcome VARCHAR NOT NULL,
        input_tokens INTEGER NOT NULL,
        output_tokens INTEGER NOT NULL,
        cache_creation_input_tokens INTEGER NOT NULL,
        cache_read_input_tokens INTEGER NOT NULL,
        cost_usd DOUBLE,
        actor VARCHAR NOT NULL,
        created_at TIMESTAMP NOT NULL
    )""",
    # ---- people -------------------------------------------------------------------------------
    """CREATE TABLE users (
        username VARCHAR PRIMARY KEY,
        display_name VARCHAR NOT NULL,
        roles VARCHAR[] NOT NULL,
        password_hash VARCHAR,
        created_at TIMESTAMP NOT NULL,
        created_by VARCHAR NOT NULL,
        disabled BOOLEAN NOT NULL DEFAULT FALSE
    )""",
)

# v2: evaluation results, one row per (run, query, metric, trial) - METHODOLOGY §14.4. Never
# only aggregates: the per-query rows make paired tests and stratification possible later.
_V2 = (
    """CREATE TABLE eval_results (
        run_id VARCHAR NOT NULL,
        ts TIMESTAMP NOT NULL,
        system VARCHAR,
        git_sha VARCHAR,
        dataset_version VARCHAR NOT NULL,
        corpus_digest VARCHAR,
        config_sha VARCHAR,
        judge_model VARCHAR,
        rubric_sha VARCHAR,
        metric_impl_sha VARCHAR NOT NULL,
        query_id VARCHAR NOT NULL,
        stratum VARCHAR,
        trial INTEGER NOT NULL,
        metric VARCHAR NOT NULL,
        value DOUBLE NOT NULL,
        judged_fraction DOUBLE,
        latency_ms INTEGER,
        tokens_in INTEGER,
        tokens_out INTEGER,
        cost_usd DOUBLE,
        trace_id VARCHAR,
        PRIMARY KEY (run_id, query_id, metric, trial)
    )""",
)

# v3: imported system runs and the judging pool (METHODOLOGY §3.6). A run's results are
# stored as corpus spans, so judgments survive re-chunking; which runs contributed a pool
# item is kept apart (pool_sources) and never shown to judges.
_V3 = (
    """CREATE TABLE runs (
        system VARCHAR PRIMARY KEY,
        format VARCHAR NOT NULL,
        source_name VARCHAR,
        source_sha256 VARCHAR NOT NULL,
        n_results INTEGER NOT NULL,
        imported_at TIMESTAMP NOT NULL,
        imported_by VARCHAR NOT NULL
    )""",
    """CREATE TABLE run_results (
        system VARCHAR NOT NULL,
        query_id VARCHAR NOT NULL,
        rank INTEGER NOT NULL,
        score DOUBLE,
        doc_id VARCHAR NOT NULL,
        start INTEGER NOT NULL,
        "end" INTEGER NOT NULL,
        match_kind VARCHAR NOT NULL,
        PRIMARY KEY (system, query_id, rank)
    )""",
    """CREATE TABLE pool_items (
        query_id VARCHAR NOT NULL,
        doc_id VARCHAR NOT NULL,
        start INTEGER NOT NULL,
        "end" INTEGER NOT NULL,
        depth INTEGER NOT NULL,
        added_at TIMESTAMP NOT NULL,
        added_by VARCHAR NOT NULL,
        PRIMARY KEY (query_id, doc_id, start, "end")
    )""",
    f"""CREATE TABLE pool_sources (
        {_POOL_SOURCES_COLUMNS},
        PRIMARY KEY (query_id, doc_id, start, "end", system)
    )""",
)

# v4: double annotation (METHODOLOGY §3.7). A round assigns pool items to annotators: a
# calibration round gives the same items to everyone in it; a split round gives each item to
# one annotator, plus an overlap share to two. An item assigned to somebody is in nobody
# else's queue. `pending_grades` are disagreements no lead has adjudicated yet: they wait in
# the adjudication queue and stay out of a freeze.
_V4 = (
    """CREATE TABLE rounds (
        round_id VARCHAR PRIMARY KEY,
        kind VARCHAR NOT NULL CHECK (kind IN ('calibration', 'split')),
        annotators VARCHAR[] NOT NULL,
        overlap DOUBLE,
        seed INTEGER,
        n_items INTEGER NOT NULL,
        note VARCHAR,
        created_by VARCHAR NOT NULL,
        created_at TIMESTAMP NOT NULL
    )""",
    """CREATE TABLE round_assignments (
        round_id VARCHAR NOT NULL,
        annotator VARCHAR NOT NULL,
        query_id VARCHAR NOT NULL,
        doc_id VARCHAR NOT NULL,
        start INTEGER NOT NULL,
        "end" INTEGER NOT NULL,
        PRIMARY KEY (round_id, annotator, query_id, doc_id, start, "end")
    )""",
    """CREATE VIEW adjudications AS
        SELECT query_id, doc_id, start, "end", grade, actor, note AS rationale, rubric_version,
               created_at, event_id
        FROM (
            SELECT *, row_number() OVER (
                PARTITION BY query_id, doc_id, start, "end" ORDER BY event_id DESC) AS rn
            FROM grade_events WHERE op = 'adjudicate'
        ) WHERE rn = 1""",
    """CREATE VIEW pending_grades AS
        SELECT d.* FROM disputed_grades d ANTI JOIN adjudications a USING (query_id, doc_id, start, "end")""",
)

# v5: system answers, for nugget assignment (METHODOLOGY §10.9). Support labels are
# verdict_events of kind 'nugget' (item_id = system|query_id|nugget_id).
_V5 = (
    f"""CREATE TABLE answers (
        {_ANSWERS_COLUMNS},
        PRIMARY KEY (system, query_id)
    )""",
)

# v6: judge calibrations (METHODOLOGY §11.1, §11.6, §11.8). Append-only: a saved calibration
# is never changed; a new judge (model or rubric sha) gets a new one, and the archived items
# let the page show the offset between old and new judge on the same items.
_V6 = (
    """CREATE TABLE calibrations (
        calibration_id VARCHAR PRIMARY KEY,
        judge_model VARCHAR NOT NULL,
        rubric_sha VARCHAR NOT NULL,
        question_sha VARCHAR,
        source VARCHAR NOT NULL,
        split_seed INTEGER NOT NULL,
        fit_share DOUBLE NOT NULL,
        band_low DOUBLE,
        band_high DOUBLE,
        max_missed_bad DOUBLE,
        max_false_fail DOUBLE,
        isotonic VARCHAR,
        report VARCHAR NOT NULL,
        note VARCHAR,
        actor VARCHAR NOT NULL,
        created_at TIMESTAMP NOT NULL
    )""",
    """CREATE TABLE calibration_items (
        calibration_id VARCHAR NOT NULL,
        item_id VARCHAR NOT NULL,
        human_label VARCHAR NOT NULL,
        judge_label VARCHAR,
        judge_p DOUBLE,
        stratum VARCHAR,
        length INTEGER,
        split VARCHAR NOT NULL,
        PRIMARY KEY (calibration_id, item_id)
    )""",
)

# v7: evaluation transcripts for failure review (METHODOLOGY §12.5, §15.4). Review verdicts
# are verdict_events (kind 'transcript'; item_id = run_id|query_id|trial); every sample
# drawn is kept so draws do not repeat until the failures are exhausted.
_V7 = (
    """CREATE TABLE transcripts (
        run_id VARCHAR NOT NULL,
        query_id VARCHAR NOT NULL,
        trial INTEGER NOT NULL,
        source VARCHAR NOT NULL CHECK (source IN ('eval_run', 'production_log')),
        question VARCHAR NOT NULL,
        stratum VARCHAR,
        passed BOOLEAN NOT NULL,
        failure_type VARCHAR,
        metrics VARCHAR,
        retrieved VARCHAR,
        answer VARCHAR,
        judge_verdict VARCHAR,
        judge_justification VARCHAR,
        trace_id VARCHAR,
        imported_at TIMESTAMP NOT NULL,
        imported_by VARCHAR NOT NULL,
        PRIMARY KEY (run_id, query_id, trial)
    )""",
    """CREATE TABLE transcript_draws (
        draw_id VARCHAR NOT NULL,
        item_id VARCHAR NOT NULL,
        position INTEGER NOT NULL,
        seed INTEGER NOT NULL,
        actor VARCHAR NOT NULL,
        created_at TIMESTAMP NOT NULL,
        PRIMARY KEY (draw_id, item_id)
    )""",
)

# v8: double annotation of evidence (METHODOLOGY §3.7 on questions' quotes). An evidence
# round gives the same questions to several annotators; until a lead settles a question
# (verdict_events kind 'evidence_adjudication'), each annotator sees only their own quotes
# of it, a per-annotator "no answer" is a verdict (kind 'evidence_no_answer') rather than a
# change to the question, and its quotes stay out of a freeze (`frozen_evidence`).
_V8 = (
    "ALTER TABLE rounds ADD COLUMN item_kind VARCHAR DEFAULT 'grade'",
    """CREATE TABLE evidence_assignments (
        round_id VARCHAR NOT NULL,
        annotator VARCHAR NOT NULL,
        query_id VARCHAR NOT NULL,
        PRIMARY KEY (round_id, annotator, query_id)
    )""",
    """CREATE VIEW unsettled_evidence_questions AS
        SELECT DISTINCT query_id FROM evidence_assignments
        ANTI JOIN (SELECT DISTINCT item_id AS query_id FROM verdict_events
                   WHERE kind = 'evidence_adjudication') s USING (query_id)""",
    """CREATE VIEW frozen_evidence AS
        SELECT * FROM current_evidence ANTI JOIN unsettled_evidence_questions USING (query_id)""",
)

# v9: a quote's author is whoever first placed it, whatever system events (re-placement
# after a corpus change) came later: blind evidence rounds decide whose quote is whose by
# it. Retired questions leave the set of unsettled ones.
_V9 = (
    """CREATE OR REPLACE VIEW current_evidence AS
        SELECT c.query_id, c.evidence_id, c.quote, c.doc_id, c.start, c."end", c.canonical_start, c.canonical_end,
               c.doc_sha256, c.match_kind, c.score, c.actor, c.created_at, c.rubric_version, c.note, c.event_id,
               a.author
        FROM (
            SELECT *, row_number() OVER (PARTITION BY query_id, evidence_id ORDER BY event_id DESC) AS rn
            FROM evidence_events
        ) c JOIN (
            SELECT query_id, evidence_id, arg_min(actor, event_id) AS author FROM evidence_events
            WHERE op = 'set' GROUP BY ALL
        ) a USING (query_id, evidence_id)
        WHERE c.rn = 1 AND c.op = 'set'""",
    """CREATE OR REPLACE VIEW unsettled_evidence_questions AS
        SELECT DISTINCT query_id FROM evidence_assignments SEMI JOIN queries USING (query_id)
        ANTI JOIN (SELECT DISTINCT item_id AS query_id FROM verdict_events
                   WHERE kind = 'evidence_adjudication') s USING (query_id)""",
    """CREATE OR REPLACE VIEW frozen_evidence AS
        SELECT * FROM current_evidence ANTI JOIN unsettled_evidence_questions USING (query_id)""",
)

# Labels sent by the client-side labeling surface carry an id the browser made; a receipt per
# id, written in the same transaction as the event, makes a re-sent label a no-op. Sign-in
# sessions let a local account survive a refresh: only the token's sha256 is stored.
_V10 = (
    """CREATE TABLE label_receipts (
        label_id VARCHAR PRIMARY KEY,
        actor VARCHAR NOT NULL,
        surface VARCHAR NOT NULL,
        item VARCHAR NOT NULL,
        action VARCHAR NOT NULL,
        event_id BIGINT,
        recorded_at TIMESTAMP NOT NULL
    )""",
    """CREATE TABLE sign_in_sessions (
        token_sha256 VARCHAR PRIMARY KEY,
        username VARCHAR NOT NULL,
        created_at TIMESTAMP NOT NULL,
        expires_at TIMESTAMP NOT NULL,
        revoked_at TIMESTAMP
    )""",
)

# v11 (issue 17): a run can be retired, as an event (undone by a 'restore' event): it leaves new
# pools and the coverage lists, while its results and the pool items it contributed stay. And
# which rubric versions each person has seen, so the changelog banner shows once.
_V11 = (
    """CREATE TABLE run_events (
        event_id BIGINT PRIMARY KEY DEFAULT nextval('event_seq'),
        system VARCHAR NOT NULL,
        op VARCHAR NOT NULL CHECK (op IN ('retire', 'restore')),
        reason VARCHAR,
        actor VARCHAR NOT NULL,
        created_at TIMESTAMP NOT NULL
    )""",
    """CREATE VIEW retired_runs AS
        SELECT system, reason, actor AS retired_by, created_at AS retired_at FROM (
            SELECT *, row_number() OVER (PARTITION BY system ORDER BY event_id DESC) AS rn FROM run_events
        ) SEMI JOIN runs USING (system) WHERE rn = 1 AND op = 'retire'""",
    """CREATE TABLE rubric_seen (
        username VARCHAR NOT NULL,
        version INTEGER NOT NULL,
        seen_at TIMESTAMP NOT NULL,
        PRIMARY KEY (username, version)
    )""",
)

# v12 (issue 16): verdict_events held five unrelated kinds of verdict under one packed string
# key (nugget support `system|query_id|nugget_id`, transcript reviews and their resolutions
# `run_id|query_id|trial`, evidence settlements and per-annotator "no answer" keyed by the
# query id), joined by rebuilding the concatenation, so `|` had to be refused in ids. Each kind
# gets its own event table with real key columns (event ids kept, so the global order holds),
# the transcript samples get real key columns too, and verdict_events goes. Rows that cannot
# be placed exactly (an unknown kind, a packed key that does not split) stop the migration
# with a message rather than being dropped. Users' role grants and revocations become events,
# seeded with one grant per role held now, so the trail starts complete.
_V12_KINDS = "('nugget', 'transcript', 'grader_failure_resolution', 'evidence_adjudication', 'evidence_no_answer')"
# A transcript verdict's packed key names exactly one transcript: the one whose concatenated
# key it equals (how the old readers matched them; '|' was refused in run and query ids since).
_V12_TRANSCRIPT_OF = "t.run_id || '|' || t.query_id || '|' || t.trial"
_V12 = (
    # ---- every verdict_events row must have a typed home, else the migration stops ------------
    f"""SELECT error('Migration 12 stopped: verdict_events has rows of kinds it does not know ('
               || string_agg(DISTINCT kind, ', ') || '); nothing was changed.')
        FROM verdict_events WHERE kind NOT IN {_V12_KINDS} HAVING count(*) > 0""",
    f"""SELECT error('Migration 12 stopped: transcript verdicts whose key does not name exactly one transcript ('
               || string_agg(item_id, ', ') || '); nothing was changed.')
        FROM (SELECT v.event_id, v.item_id, count(t.run_id) AS n FROM verdict_events v
              LEFT JOIN transcripts t ON v.item_id = {_V12_TRANSCRIPT_OF}
              WHERE v.kind IN ('transcript', 'grader_failure_resolution') GROUP BY v.event_id, v.item_id)
        WHERE n <> 1 HAVING count(*) > 0""",
    """SELECT error('Migration 12 stopped: nugget support labels whose key is not system|query_id|nugget_id ('
               || string_agg(item_id, ', ') || '); nothing was changed.')
        FROM verdict_events WHERE kind = 'nugget' AND (detail IS NULL OR query_id IS NULL
            OR NOT starts_with(item_id, detail || '|' || query_id || '|')
            OR length(item_id) <= length(detail) + length(query_id) + 2)
        HAVING count(*) > 0""",
    f"""SELECT error('Migration 12 stopped: transcript samples whose item does not name exactly one transcript ('
               || string_agg(item_id, ', ') || '); nothing was changed.')
        FROM (SELECT d.draw_id, d.item_id, count(t.run_id) AS n FROM transcript_draws d
              LEFT JOIN transcripts t ON d.item_id = {_V12_TRANSCRIPT_OF} GROUP BY d.draw_id, d.item_id)
        WHERE n <> 1 HAVING count(*) > 0""",
    # ---- the typed event tables -------------------------------------------------------------------
    # Whether a system's answer supports a nugget; 'withdrawn' is an undo (or the answer was replaced).
    """CREATE TABLE nugget_support_events (
        event_id BIGINT PRIMARY KEY DEFAULT nextval('event_seq'),
        system VARCHAR NOT NULL,
        query_id VARCHAR NOT NULL,
        nugget_id VARCHAR NOT NULL,
        label VARCHAR NOT NULL CHECK (label IN ('support', 'partial', 'none', 'withdrawn')),
        note VARCHAR,
        actor VARCHAR NOT NULL,
        created_at TIMESTAMP NOT NULL,
        rubric_version INTEGER
    )""",
    # A reviewer's verdict on a failure transcript; 'withdrawn' makes it unreviewed again.
    _transcript_review_events(
        "transcript_review_events", "run_id", ("system_failure", "grader_failure", "ambiguous", "withdrawn")
    ),
    # A lead's resolution of a questioned grade (a review that said the grader was wrong).
    """CREATE TABLE transcript_resolution_events (
        event_id BIGINT PRIMARY KEY DEFAULT nextval('event_seq'),
        run_id VARCHAR NOT NULL,
        query_id VARCHAR NOT NULL,
        trial INTEGER NOT NULL,
        resolution VARCHAR NOT NULL CHECK (resolution IN ('label_fixed', 'judge_fixed', 'reviewer_wrong')),
        note VARCHAR,
        actor VARCHAR NOT NULL,
        created_at TIMESTAMP NOT NULL,
        rubric_version INTEGER
    )""",
    # A lead's settlement of an evidence-round question: keep:<annotator>, keep_all or no_answer.
    """CREATE TABLE evidence_settlement_events (
        event_id BIGINT PRIMARY KEY DEFAULT nextval('event_seq'),
        query_id VARCHAR NOT NULL,
        decision VARCHAR NOT NULL CHECK (decision IN ('keep_all', 'no_answer') OR decision LIKE 'keep:%'),
        note VARCHAR,
        actor VARCHAR NOT NULL,
        created_at TIMESTAMP NOT NULL,
        rubric_version INTEGER
    )""",
    # An annotator's own "the corpus does not answer this" in an evidence round (or its withdrawal).
    """CREATE TABLE evidence_no_answer_events (
        event_id BIGINT PRIMARY KEY DEFAULT nextval('event_seq'),
        query_id VARCHAR NOT NULL,
        op VARCHAR NOT NULL CHECK (op IN ('no_answer', 'withdrawn')),
        note VARCHAR,
        actor VARCHAR NOT NULL,
        created_at TIMESTAMP NOT NULL,
        rubric_version INTEGER
    )""",
    # ---- the rows, moved with their event ids ----------------------------------------------------
    """INSERT INTO nugget_support_events (event_id, system, query_id, nugget_id, label, note, actor, created_at,
                                          rubric_version)
        SELECT event_id, detail, query_id, substr(item_id, length(detail) + length(query_id) + 3), value, note,
               actor, created_at, rubric_version
        FROM verdict_events WHERE kind = 'nugget'""",
    f"""INSERT INTO transcript_review_events (event_id, run_id, query_id, trial, verdict, failure_class, note, actor,
                                             created_at, rubric_version)
        SELECT v.event_id, t.run_id, t.query_id, t.trial, v.value, v.detail, v.note, v.actor, v.created_at,
               v.rubric_version
        FROM verdict_events v JOIN transcripts t ON v.item_id = {_V12_TRANSCRIPT_OF} WHERE v.kind = 'transcript'""",
    f"""INSERT INTO transcript_resolution_events (event_id, run_id, query_id, trial, resolution, note, actor,
                                                 created_at, rubric_version)
        SELECT v.event_id, t.run_id, t.query_id, t.trial, v.value, v.note, v.actor, v.created_at, v.rubric_version
        FROM verdict_events v JOIN transcripts t ON v.item_id = {_V12_TRANSCRIPT_OF}
        WHERE v.kind = 'grader_failure_resolution'""",
    """INSERT INTO evidence_settlement_events (event_id, query_id, decision, note, actor, created_at, rubric_version)
        SELECT event_id, item_id, value, note, actor, created_at, rubric_version
        FROM verdict_events WHERE kind = 'evidence_adjudication'""",
    """INSERT INTO evidence_no_answer_events (event_id, query_id, op, note, actor, created_at, rubric_version)
        SELECT event_id, item_id, value, note, actor, created_at, rubric_version
        FROM verdict_events WHERE kind = 'evidence_no_answer'""",
    """SELECT error('Migration 12 stopped: ' || (SELECT count(*) FROM verdict_events) || ' verdicts but '
               || n || ' moved; nothing was changed.')
        FROM (SELECT (SELECT count(*) FROM nugget_support_events) + (SELECT count(*) FROM transcript_review_events)
                     + (SELECT count(*) FROM transcript_resolution_events)
                     + (SELECT count(*) FROM evidence_settlement_events)
                     + (SELECT count(*) FROM evidence_no_answer_events) AS n)
        WHERE n <> (SELECT count(*) FROM verdict_events)""",
    # ---- transcript samples: real key columns instead of the packed item id -----------------------
    *_rebuilt(
        "transcript_draws",
        "transcript_draws_v7",
        """CREATE TABLE transcript_draws (
        draw_id VARCHAR NOT NULL,
        run_id VARCHAR NOT NULL,
        query_id VARCHAR NOT NULL,
        trial INTEGER NOT NULL,
        position INTEGER NOT NULL,
        seed INTEGER NOT NULL,
        actor VARCHAR NOT NULL,
        created_at TIMESTAMP NOT NULL,
        PRIMARY KEY (draw_id, run_id, query_id, trial)
    )""",
        f"""INSERT INTO transcript_draws (draw_id, run_id, query_id, trial, position, seed, actor, created_at)
        SELECT d.draw_id, t.run_id, t.query_id, t.trial, d.position, d.seed, d.actor, d.created_at
        FROM transcript_draws_v7 d JOIN transcripts t ON d.item_id = {_V12_TRANSCRIPT_OF}""",
    ),
    # ---- current state, derived -------------------------------------------------------------------
    """CREATE VIEW current_nugget_support AS
        SELECT system, query_id, nugget_id, label, note, actor, created_at, event_id FROM (
            SELECT *, row_number() OVER (PARTITION BY system, query_id, nugget_id ORDER BY event_id DESC) AS rn
            FROM nugget_support_events
        ) WHERE rn = 1 AND label <> 'withdrawn'""",
    _current_transcript_reviews("run_id"),
    """CREATE OR REPLACE VIEW unsettled_evidence_questions AS
        SELECT DISTINCT a.query_id FROM evidence_assignments a
        WHERE EXISTS (SELECT 1 FROM queries q WHERE q.query_id = a.query_id)
          AND NOT EXISTS (SELECT 1 FROM evidence_settlement_events s WHERE s.query_id = a.query_id)""",
    "DROP TABLE verdict_events",
    # ---- users' roles: an audit trail ---------------------------------------------------------------
    """CREATE TABLE user_role_events (
        event_id BIGINT PRIMARY KEY DEFAULT nextval('event_seq'),
        username VARCHAR NOT NULL,
        op VARCHAR NOT NULL CHECK (op IN ('grant', 'revoke')),
        role VARCHAR NOT NULL,
        note VARCHAR,
        actor VARCHAR NOT NULL,
        created_at TIMESTAMP NOT NULL
    )""",
    """INSERT INTO user_role_events (username, op, role, note, actor, created_at)
        SELECT username, 'grant', role, 'held when the role trail began (migration 12)', 'system',
               now() AT TIME ZONE 'UTC'
        FROM (SELECT username, unnest(roles) AS role FROM users) ORDER BY username, role""",
)

# v13 (issue 19): the current grading state kept in tables beside the grade event log, so a
# page reads a few hundred thousand state rows instead of replaying millions of events through
# window views on every visit. The log stays the truth: these tables are a pure function of
# it, filled here from it and updated by ``golden_store.live.grade_state`` in the same transaction
# as every grade event (judging.insert_tx, adjudication.decide_tx); ``grade_state.rebuild_tx``
# refills them from the log. The views keep their names, columns and meaning and now read the
# tables:
#   grade_state         each annotator's latest grade or retract per item (current_grades =
#                       its 'grade' rows)
#   judging_state       each annotator's latest grade/skip/unsure/retract per item (what is
#                       done in their judging queue, and what an undo may retract)
#   adjudication_state  the latest lead decision per item (the adjudications view)
#   grade_item_state    per item with any grade or retract: how many current grades, how many
#                       distinct values, the agreed value, who graded, first/last grade time
#                       (disputed, pending and agreed final grades)
GRADE_STATE_FILL: tuple[str, ...] = (
    """INSERT INTO grade_state (query_id, doc_id, start, "end", actor, op, grade, doc_sha256, rubric_version,
                                round_id, note, created_at, event_id)
        SELECT query_id, doc_id, start, "end", actor, op, grade, doc_sha256, rubric_version, round_id, note,
               created_at, event_id
        FROM (
            SELECT *, row_number() OVER (
                PARTITION BY query_id, doc_id, start, "end", actor ORDER BY event_id DESC) AS rn
            FROM grade_events WHERE op IN ('grade', 'retract')
        ) AS latest WHERE rn = 1
        ORDER BY query_id, doc_id, start, "end", actor""",
    """INSERT INTO judging_state (actor, query_id, doc_id, start, "end", op, event_id)
        SELECT actor, query_id, doc_id, start, "end", op, event_id
        FROM (
            SELECT *, row_number() OVER (
                PARTITION BY actor, query_id, doc_id, start, "end" ORDER BY event_id DESC) AS rn
            FROM grade_events WHERE op IN ('grade', 'skip', 'unsure', 'retract')
        ) AS latest WHERE rn = 1
        ORDER BY actor, query_id, doc_id, start, "end\"""",
    """INSERT INTO adjudication_state (query_id, doc_id, start, "end", grade, actor, note, doc_sha256,
                                      rubric_version, created_at, event_id)
        SELECT query_id, doc_id, start, "end", grade, actor, note, doc_sha256, rubric_version, created_at, event_id
        FROM (
            SELECT *, row_number() OVER (
                PARTITION BY query_id, doc_id, start, "end" ORDER BY event_id DESC) AS rn
            FROM grade_events WHERE op = 'adjudicate'
        ) AS latest WHERE rn = 1
        ORDER BY query_id, doc_id, start, "end\"""",
    """INSERT INTO grade_item_state (query_id, doc_id, start, "end", n_graded, n_distinct, grade, actors,
                                    rubric_version, first_graded_at, last_graded_at)
        SELECT query_id, doc_id, start, "end", count(*) FILTER (WHERE op = 'grade'), count(DISTINCT grade),
               min(grade), string_agg(actor, ',' ORDER BY actor) FILTER (WHERE op = 'grade'),
               max(rubric_version) FILTER (WHERE op = 'grade'), min(created_at) FILTER (WHERE op = 'grade'),
               max(created_at) FILTER (WHERE op = 'grade')
        FROM grade_state
        GROUP BY query_id, doc_id, start, "end"
        ORDER BY query_id, doc_id, start, "end\"""",
)
_V13 = (
    """CREATE TABLE grade_state (
        query_id VARCHAR NOT NULL,
        doc_id VARCHAR NOT NULL,
        start INTEGER NOT NULL,
        "end" INTEGER NOT NULL,
        actor VARCHAR NOT NULL,
        op VARCHAR NOT NULL CHECK (op IN ('grade', 'retract')),
        grade SMALLINT CHECK ((op = 'grade') = (grade IS NOT NULL)),
        doc_sha256 VARCHAR,
        rubric_version INTEGER,
        round_id VARCHAR,
        note VARCHAR,
        created_at TIMESTAMP NOT NULL,
        event_id BIGINT NOT NULL,
        PRIMARY KEY (query_id, doc_id, start, "end", actor)
    )""",
    """CREATE TABLE judging_state (
        actor VARCHAR NOT NULL,
        query_id VARCHAR NOT NULL,
        doc_id VARCHAR NOT NULL,
        start INTEGER NOT NULL,
        "end" INTEGER NOT NULL,
        op VARCHAR NOT NULL CHECK (op IN ('grade', 'skip', 'unsure', 'retract')),
        event_id BIGINT NOT NULL,
        PRIMARY KEY (actor, query_id, doc_id, start, "end")
    )""",
    """CREATE TABLE adjudication_state (
        query_id VARCHAR NOT NULL,
        doc_id VARCHAR NOT NULL,
        start INTEGER NOT NULL,
        "end" INTEGER NOT NULL,
        grade SMALLINT NOT NULL,
        actor VARCHAR NOT NULL,
        note VARCHAR,
        doc_sha256 VARCHAR,
        rubric_version INTEGER,
        created_at TIMESTAMP NOT NULL,
        event_id BIGINT NOT NULL,
        PRIMARY KEY (query_id, doc_id, start, "end")
    )""",
    """CREATE TABLE grade_item_state (
        query_id VARCHAR NOT NULL,
        doc_id VARCHAR NOT NULL,
        start INTEGER NOT NULL,
        "end" INTEGER NOT NULL,
        n_graded BIGINT NOT NULL,
        n_distinct BIGINT NOT NULL,
        grade SMALLINT,
        actors VARCHAR,
        rubric_version INTEGER,
        first_graded_at TIMESTAMP,
        last_graded_at TIMESTAMP,
        PRIMARY KEY (query_id, doc_id, start, "end")
    )""",
    *GRADE_STATE_FILL,
    # ---- the views, same names and columns, reading the state tables --------------------------
    """CREATE OR REPLACE VIEW current_grades AS
        SELECT query_id, doc_id, start, "end", doc_sha256, actor, grade, rubric_version, round_id,
               note, created_at, event_id
        FROM grade_state WHERE op = 'grade'""",
    """CREATE OR REPLACE VIEW adjudications AS
        SELECT query_id, doc_id, start, "end", grade, actor, note AS rationale, rubric_version,
               created_at, event_id
        FROM adjudication_state""",
    """CREATE OR REPLACE VIEW final_grades AS
        SELECT query_id, doc_id, start, "end", grade, actor AS decided_by, rubric_version,
               created_at, 'adjudicated' AS basis FROM adjudication_state
        UNION ALL
        SELECT i.query_id, i.doc_id, i.start, i."end", i.grade, i.actors, i.rubric_version,
               i.last_graded_at, 'agreed' AS basis
        FROM grade_item_state i
        WHERE i.n_distinct = 1 AND NOT EXISTS (
            SELECT 1 FROM adjudication_state a WHERE a.query_id = i.query_id AND a.doc_id = i.doc_id
            AND a.start = i.start AND a."end" = i."end")""",
    """CREATE OR REPLACE VIEW disputed_grades AS
        SELECT query_id, doc_id, start, "end", n_graded AS n_annotators, n_distinct
        FROM grade_item_state WHERE n_distinct > 1""",
    """CREATE OR REPLACE VIEW pending_grades AS
        SELECT i.query_id, i.doc_id, i.start, i."end", i.n_graded AS n_annotators, i.n_distinct
        FROM grade_item_state i
        WHERE i.n_distinct > 1 AND NOT EXISTS (
            SELECT 1 FROM adjudication_state a WHERE a.query_id = i.query_id AND a.doc_id = i.doc_id
            AND a.start = i.start AND a."end" = i."end")""",
)

# v14: a store-wide count of committed writes. Pages cache whole-store aggregates under the
# store's generation (golden_store.db.store.Store.generation); writes that take no event id (pool
# items, rounds, run replacement, calibrations) were counted per process only, so on
# PostgreSQL another app process's such write left a cached page stale. Every write
# transaction now takes a value from this sequence.
_V14 = (
    """CREATE SEQUENCE write_seq START 1""",
)
WRITE_SEQ_VERSION = 14

# v15: one meaning per word. "run" named three things: a system's ranked results (runs,
# run_results), a recorded scoring (eval_results.run_id) and the evaluation transcripts came
# from (transcripts.run_id and the tables keyed like it). The last two are evaluations now:
# ``evaluation_id``; "run" is only a system's run. The view over review events is rebuilt
# (dropped first: PostgreSQL keeps a view's old column name through a rename). Likewise
# "bootstrap" is only the statistical resampling: LLM question proposals are recorded as
# 'draft_questions' (like 'draft_nuggets'), earlier calls renamed with them.
_TRANSCRIPT_KEYED = ("transcripts", "transcript_draws", "transcript_review_events", "transcript_resolution_events")
_V15 = (
    "DROP VIEW current_transcript_reviews",
    "ALTER TABLE eval_results RENAME COLUMN run_id TO evaluation_id",
    *(f"ALTER TABLE {t} RENAME COLUMN run_id TO evaluation_id" for t in _TRANSCRIPT_KEYED),
    _current_transcript_reviews("evaluation_id"),
    "UPDATE llm_calls SET purpose = 'draft_questions' WHERE purpose = 'bootstrap_questions'",
)

# v16: pool_sources without its primary key. The table records which runs put an item in the
# pool (one row per item and run, the run's best rank); nothing reads it by key, and at team
# scale (20 runs x 5,000 queries x depth 100: 10 M rows) DuckDB's in-memory index of that key
# cost ~200 bytes a row, most of a pool build's 3 GB (issue 19). build_pool adds only the
# (item, run) pairs not recorded yet, as ON CONFLICT DO NOTHING did.
_V16 = _rebuilt(
    "pool_sources",
    "pool_sources_v15",
    f"""CREATE TABLE pool_sources (
        {_POOL_SOURCES_COLUMNS}
    )""",
    """INSERT INTO pool_sources (query_id, doc_id, start, "end", system, rank)
        SELECT query_id, doc_id, start, "end", system, rank FROM pool_sources_v15
        ORDER BY query_id, doc_id, start, "end", system""",
)

# v17: the live questions as DISTINCT ON (the latest revision of each query) rather than
# row_number() ... = 1. Same rows on both engines; PostgreSQL has no statistics for a window
# result, so it expected 0.5% of the questions to be live and chose nested loops over whole
# tables wherever a query joined this view (the Judge queue's refresh cost 4x DuckDB's,
# scripts/bench_team_store.py); for DISTINCT ON it estimates from query_id's distinct count.
_V17 = (_queries_view(),)

# v18: an answer's outcome (METHODOLOGY §10.5): answered, abstained (declined: "the documents
# do not say"), refused (a safety refusal, its own category) or unknown (nobody said yet). The
# imported outcome is a column of the answer (the table is rebuilt: DuckDB adds no column with
# a CHECK); a reviewer's mark or correction is an event, and the current outcome is the latest
# mark, else the imported one. 'withdrawn' undoes a mark (or the answer's text was replaced).
_V18 = (
    *_rebuilt(
        "answers",
        "answers_v17",
        f"""CREATE TABLE answers (
        {_ANSWERS_COLUMNS},
        outcome VARCHAR NOT NULL DEFAULT 'unknown'
            CHECK (outcome IN ('answered', 'abstained', 'refused', 'unknown')),
        PRIMARY KEY (system, query_id)
    )""",
        """INSERT INTO answers (system, query_id, answer, imported_at, imported_by, outcome)
        SELECT system, query_id, answer, imported_at, imported_by, 'unknown' FROM answers_v17
        ORDER BY system, query_id""",
    ),
    """CREATE TABLE answer_outcome_events (
        event_id BIGINT PRIMARY KEY DEFAULT nextval('event_seq'),
        system VARCHAR NOT NULL,
        query_id VARCHAR NOT NULL,
        outcome VARCHAR NOT NULL CHECK (outcome IN ('answered', 'abstained', 'refused', 'withdrawn')),
        note VARCHAR,
        actor VARCHAR NOT NULL,
        created_at TIMESTAMP NOT NULL
    )""",
    """CREATE VIEW current_answer_outcomes AS
        SELECT a.system, a.query_id, coalesce(m.outcome, a.outcome) AS outcome, a.outcome AS imported_outcome,
               CASE WHEN m.outcome IS NOT NULL THEN 'marked' WHEN a.outcome <> 'unknown' THEN 'imported'
                    ELSE 'unmarked' END AS basis,
               m.actor AS marked_by, m.created_at AS marked_at, m.note, m.event_id
        FROM answers a LEFT JOIN (
            SELECT system, query_id, outcome, note, actor, created_at, event_id FROM (
                SELECT *, row_number() OVER (PARTITION BY system, query_id ORDER BY event_id DESC) AS rn
                FROM answer_outcome_events
            ) AS latest WHERE rn = 1 AND outcome <> 'withdrawn'
        ) AS m ON m.system = a.system AND m.query_id = a.query_id""",
)

# V19 (issue 25): the agreement bar is a lead's recorded choice, not a constant. §3.7 sets it on
# Cohen's κ as its own code computes it (unweighted); a lead may put the graded bar on a weighted
# κ or on ordinal α instead, and every choice is an event (the latest is in force, and goes into
# a frozen version's manifest). A split round records the bar check it was made under, and the
# reason when a lead split below the bar.
_V19 = (
    """CREATE TABLE agreement_bar_events (
        event_id BIGINT PRIMARY KEY DEFAULT nextval('event_seq'),
        graded_measure VARCHAR NOT NULL
            CHECK (graded_measure IN ('kappa_unweighted', 'kappa_linear', 'kappa_quadratic', 'alpha_ordinal')),
        graded_threshold DOUBLE NOT NULL,
        binary_threshold DOUBLE NOT NULL,
        note VARCHAR,
        actor VARCHAR NOT NULL,
        created_at TIMESTAMP NOT NULL
    )""",
    "ALTER TABLE rounds ADD COLUMN bar_check VARCHAR",
    "ALTER TABLE rounds ADD COLUMN bar_override VARCHAR",
)

# v20 (issue 25, item 9): a question's CI tier (METHODOLOGY §14.1): smoke (every commit, a few
# deterministic items), regression (every PR touching prompts, retrieval config, models,
# chunking or the parser) or release (nightly / pre-release); NULL: not tagged. A column of the
# revision, so a change of tier is a revision like any other edit. The allowed values are
# checked where questions come in (golden_store.live.queries: import, save); DuckDB adds no column
# with a CHECK, and rebuilding query_revisions under its views is not worth it. The queries view
# gains the column at its end (PostgreSQL replaces a view only by appending columns).
_V20 = (
    "ALTER TABLE query_revisions ADD COLUMN tier VARCHAR",
    _queries_view("tier"),
)

# v21 (issue 27): the cascade at work (METHODOLOGY §11.1, §11.6, §11.8). A calibration keeps the
# judge's own rubric text (pool grading sends exactly what was calibrated), its scale (binary
# pass/fail, graded 0-3, or nugget support with partial) and the pass/fail cut on the grades.
# A pool-grading job is pinned to one calibration; its pause/resume are events. Each judge
# label is its own kind of event (judge_label_events), attributed to model id + rubric sha +
# calibration id, never a grade_event (never a person's label); judge_item_state keeps every
# item's latest judge decision beside the log (the Judge queue reads it on every key). An
# evaluation row says which labels it was scored on (human, or human+judge).
_V21 = (
    "ALTER TABLE calibrations ADD COLUMN scale VARCHAR",
    "ALTER TABLE calibrations ADD COLUMN pass_cut INTEGER",
    "ALTER TABLE calibrations ADD COLUMN rubric_text VARCHAR",
    """CREATE TABLE judge_jobs (
        job_id VARCHAR PRIMARY KEY,
        calibration_id VARCHAR NOT NULL,
        judge_model VARCHAR NOT NULL,
        rubric_sha VARCHAR NOT NULL,
        mode VARCHAR NOT NULL CHECK (mode IN ('batch', 'direct')),
        sample_share DOUBLE NOT NULL,
        sample_seed INTEGER NOT NULL,
        gate_kappa DOUBLE,
        gate_override VARCHAR,
        estimate VARCHAR,
        actor VARCHAR NOT NULL,
        created_at TIMESTAMP NOT NULL
    )""",
    """CREATE TABLE judge_job_events (
        event_id BIGINT PRIMARY KEY DEFAULT nextval('event_seq'),
        job_id VARCHAR NOT NULL,
        status VARCHAR NOT NULL CHECK (status IN ('started', 'paused', 'resumed', 'done', 'failed')),
        note VARCHAR,
        actor VARCHAR NOT NULL,
        created_at TIMESTAMP NOT NULL
    )""",
    """CREATE TABLE judge_label_events (
        event_id BIGINT PRIMARY KEY DEFAULT nextval('event_seq'),
        job_id VARCHAR NOT NULL,
        calibration_id VARCHAR NOT NULL,
        query_id VARCHAR NOT NULL,
        doc_id VARCHAR NOT NULL,
        start INTEGER NOT NULL,
        "end" INTEGER NOT NULL,
        outcome VARCHAR NOT NULL CHECK (outcome IN ('labeled', 'escalated', 'refused', 'error')),
        route VARCHAR NOT NULL CHECK (route IN ('judge', 'human', 'sample')),
        grade INTEGER,
        p_fail DOUBLE,
        p_used DOUBLE,
        reason VARCHAR,
        justification VARCHAR,
        model VARCHAR NOT NULL,
        rubric_sha VARCHAR NOT NULL,
        prompt_sha VARCHAR,
        doc_sha256 VARCHAR,
        batch_id VARCHAR,
        created_at TIMESTAMP NOT NULL
    )""",
    """CREATE TABLE judge_item_state (
        query_id VARCHAR NOT NULL,
        doc_id VARCHAR NOT NULL,
        start INTEGER NOT NULL,
        "end" INTEGER NOT NULL,
        event_id BIGINT NOT NULL,
        job_id VARCHAR NOT NULL,
        calibration_id VARCHAR NOT NULL,
        outcome VARCHAR NOT NULL,
        route VARCHAR NOT NULL,
        grade INTEGER,
        created_at TIMESTAMP NOT NULL,
        PRIMARY KEY (query_id, doc_id, start, "end")
    )""",
    "ALTER TABLE eval_results ADD COLUMN labels VARCHAR",
)

# v22 (issue 27, item 6): reviewers read the judge's passes too, so a review can say the answer
# is right: verdict 'no_failure' (on a judged pass it confirms the judge; on a judged failure it
# is a false fail). DuckDB cannot change a CHECK in place: the table is rebuilt under its view,
# every row and event id kept.
_V22 = (
    "DROP VIEW current_transcript_reviews",
    _transcript_review_events(
        "transcript_review_events_v22",
        "evaluation_id",
        ("system_failure", "grader_failure", "ambiguous", "no_failure", "withdrawn"),
    ),
    "INSERT INTO transcript_review_events_v22 SELECT event_id, evaluation_id, query_id, trial, verdict, failure_class, "
    "note, actor, created_at, rubric_version FROM transcript_review_events",
    "DROP TABLE transcript_review_events",
    "ALTER TABLE transcript_review_events_v22 RENAME TO transcript_review_events",
    _current_transcript_reviews("evaluation_id"),
)

# v23 (issue 28): the studio in a team's pipeline.
# - api_tokens: bearer tokens for the HTTP API. Only the SHA-256 of the secret is kept (shown
#   once at creation); a token carries its own roles (never more than its creator's), may
#   expire, and is revoked by an event-like column pair. api_token_uses is the audit of use
#   (and of refused sign-ins, token_id NULL when the secret matched none): what the throttle
#   counts and what an admin reads.
# - webhook_endpoints / webhook_events / webhook_deliveries / webhook_attempts: a durable
#   outbox. An event row is written in the same transaction as the change it reports
#   (version.frozen, round.completed, ...); one delivery row per (event, endpoint) carries the
#   state (pending / delivered / failed) and the next attempt time; every attempt is logged.
#   The endpoint's signing secret is kept (HMAC needs it), unlike an API token's.
# - judgment_imports: judgments people already have (TREC qrels, BEIR TSV, Label Studio JSON),
#   one row per import: its source (an assessor name or "import:FILE"), file, format and digest.
#   The judgments themselves are grade events whose actor is that source.
_V23 = (
    # the audit and the delivery log take their ids from their own sequence: event_seq is half
    # of the store's generation (Store.generation), and a request served or a delivery tried
    # changes nothing a cached page figure reads
    "CREATE SEQUENCE audit_seq START 1",
    """CREATE TABLE api_tokens (
        token_id VARCHAR PRIMARY KEY,
        name VARCHAR NOT NULL,
        token_hash VARCHAR NOT NULL UNIQUE,
        roles VARCHAR NOT NULL,
        created_by VARCHAR NOT NULL,
        created_at TIMESTAMP NOT NULL,
        expires_at TIMESTAMP,
        revoked_at TIMESTAMP,
        revoked_by VARCHAR,
        last_used_at TIMESTAMP
    )""",
    """CREATE TABLE api_token_uses (
        event_id BIGINT PRIMARY KEY DEFAULT nextval('audit_seq'),
        token_id VARCHAR,
        client VARCHAR,
        method VARCHAR NOT NULL,
        path VARCHAR NOT NULL,
        status INTEGER NOT NULL,
        outcome VARCHAR NOT NULL CHECK (outcome IN ('ok', 'denied', 'unknown', 'revoked', 'expired', 'throttled')),
        created_at TIMESTAMP NOT NULL
    )""",
    """CREATE TABLE webhook_endpoints (
        endpoint_id VARCHAR PRIMARY KEY,
        url VARCHAR NOT NULL,
        secret VARCHAR NOT NULL,
        event_types VARCHAR NOT NULL,
        description VARCHAR,
        created_by VARCHAR NOT NULL,
        created_at TIMESTAMP NOT NULL,
        disabled_at TIMESTAMP,
        disabled_by VARCHAR
    )""",
    """CREATE TABLE webhook_events (
        event_id VARCHAR PRIMARY KEY,
        event_type VARCHAR NOT NULL,
        payload VARCHAR NOT NULL,
        actor VARCHAR,
        created_at TIMESTAMP NOT NULL
    )""",
    """CREATE TABLE webhook_deliveries (
        event_id VARCHAR NOT NULL,
        endpoint_id VARCHAR NOT NULL,
        status VARCHAR NOT NULL CHECK (status IN ('pending', 'delivered', 'failed')),
        attempts INTEGER NOT NULL,
        next_attempt_at TIMESTAMP,
        last_attempt_at TIMESTAMP,
        last_status_code INTEGER,
        last_error VARCHAR,
        delivered_at TIMESTAMP,
        PRIMARY KEY (event_id, endpoint_id)
    )""",
    """CREATE TABLE webhook_attempts (
        attempt_id BIGINT PRIMARY KEY DEFAULT nextval('audit_seq'),
        event_id VARCHAR NOT NULL,
        endpoint_id VARCHAR NOT NULL,
        attempt INTEGER NOT NULL,
        status_code INTEGER,
        error VARCHAR,
        duration_ms DOUBLE,
        created_at TIMESTAMP NOT NULL
    )""",
    """CREATE TABLE judgment_imports (
        import_id VARCHAR PRIMARY KEY,
        source VARCHAR NOT NULL,
        file_name VARCHAR NOT NULL,
        fmt VARCHAR NOT NULL,
        file_sha256 VARCHAR NOT NULL,
        n_judgments INTEGER NOT NULL,
        actor VARCHAR NOT NULL,
        created_at TIMESTAMP NOT NULL
    )""",
)

# v24 (issue 36, item 6): a recorded number carries the definitions that made it, so two
# evaluations scored under different rules cannot compare as a system change. Per row (the same
# for every row of a trial; the trials of one evaluation share them): run_level, 'document'
# (a TREC run against the version's qrels) or 'passage' (a JSONL run labeled through a hit
# rule); hit_rule, the passage run's hit rule (NULL for a document run); run_depth, the most
# results any scored question had in the run as scored; label_judge_models and
# label_rubric_shas, with labels 'human+judge', the sorted distinct models and rubric shas of
# the judge labels the scoring used (', '-joined; '' when it used none; NULL with human labels).
# Not judge_model / rubric_sha, which name the model that judged a --judged *measure*. Rows
# recorded before this have run_level NULL: their definitions were not recorded.
_V24 = (
    "ALTER TABLE eval_results ADD COLUMN run_level VARCHAR",
    "ALTER TABLE eval_results ADD COLUMN hit_rule VARCHAR",
    "ALTER TABLE eval_results ADD COLUMN run_depth INTEGER",
    "ALTER TABLE eval_results ADD COLUMN label_judge_models VARCHAR",
    "ALTER TABLE eval_results ADD COLUMN label_rubric_shas VARCHAR",
)

# v25 (issue 37, item 3): why a revision was made, when the change needs a reason. Taking a
# question out of the held-out set is a lead's explicit decision (``golden queries import
# --unhold REASON``, the API's ``unhold_reason``): the reason is kept on the revision that
# clears the flag, beside who made it and when. NULL: no reason was asked for. Not in the
# queries view: it explains one change, it is not a property of the question.
_V25 = (
    "ALTER TABLE query_revisions ADD COLUMN change_reason VARCHAR",
)

# v26 (issue 37, probe A9): the API token audit keeps refusals a number of days and at most N
# of them, and a live token's answered requests a (longer) number of days
# (annotator.api_tokens.AuditRetention), pruned in the transaction that writes the audit. The
# index on (outcome, created_at) lets each kind's delete by age find only the rows that aged
# out, and the cap count the refusals, without reading the table: on PostgreSQL a whole-table
# read in a SERIALIZABLE transaction also locks the whole table against other writers' audit
# rows. (DuckDB skips row groups by their min/max created_at either way.)
_V26 = (
    "CREATE INDEX api_token_uses_outcome_created_at ON api_token_uses (outcome, created_at)",
)

# v27 (issue 40): the answer layer's labels. A question's reference answer (a short extractive
# form for exact match and token F1, and/or a full answer) anchored to evidence spans, and the
# criteria a rubric-graded judge and people mark answers by (3-5 per question or per stratum,
# each with a worked example, a fixed weight and a narrow scale). Both are event logs, like
# nuggets: every draft (a person's or Claude's, with model and prompt sha), edit, approval and
# retirement is a row, so revisions are kept; the current state is a view.
_V27 = (
    """CREATE TABLE reference_answer_events (
        event_id BIGINT PRIMARY KEY DEFAULT nextval('event_seq'),
        query_id VARCHAR NOT NULL,
        op VARCHAR NOT NULL CHECK (op IN ('write', 'approve', 'retire')),
        short_answer VARCHAR,
        full_answer VARCHAR,
        evidence VARCHAR NOT NULL DEFAULT '[]',
        source VARCHAR NOT NULL CHECK (source IN ('person', 'llm')),
        model VARCHAR,
        prompt_sha VARCHAR,
        note VARCHAR,
        actor VARCHAR NOT NULL,
        created_at TIMESTAMP NOT NULL
    )""",
    """CREATE VIEW current_reference_answers AS
        WITH written AS (
            SELECT * FROM (
                SELECT *, row_number() OVER (PARTITION BY query_id ORDER BY event_id DESC) AS rn
                FROM reference_answer_events WHERE op IN ('write', 'retire')
            ) AS latest WHERE rn = 1 AND op = 'write'
        ),
        approvals AS (
            SELECT query_id, max(event_id) AS approved_event FROM reference_answer_events
            WHERE op = 'approve' GROUP BY query_id
        )
        SELECT w.query_id, w.event_id AS revision, w.short_answer, w.full_answer, w.evidence, w.source, w.model,
               w.prompt_sha, w.note, w.actor, w.created_at,
               coalesce(a.approved_event > w.event_id, false) AS approved
        FROM written w LEFT JOIN approvals a ON a.query_id = w.query_id""",
    """CREATE TABLE answer_criterion_events (
        event_id BIGINT PRIMARY KEY DEFAULT nextval('event_seq'),
        scope VARCHAR NOT NULL CHECK (scope IN ('query', 'stratum')),
        scope_id VARCHAR NOT NULL,
        criterion_id VARCHAR NOT NULL,
        op VARCHAR NOT NULL CHECK (op IN ('write', 'retire')),
        text VARCHAR,
        example VARCHAR,
        weight DOUBLE,
        scale_max INTEGER CHECK (scale_max IS NULL OR scale_max IN (1, 2, 3)),
        position INTEGER,
        actor VARCHAR NOT NULL,
        created_at TIMESTAMP NOT NULL
    )""",
    """CREATE VIEW current_answer_criteria AS
        SELECT scope, scope_id, criterion_id, text, example, weight, scale_max, position, actor, created_at,
               event_id AS revision
        FROM (
            SELECT *, row_number() OVER (PARTITION BY scope, scope_id, criterion_id ORDER BY event_id DESC) AS rn
            FROM answer_criterion_events
        ) AS latest WHERE rn = 1 AND op = 'write'""",
)

# v28 (issue 40): what a system's answer rested on and what it cited, imported with the answer.
# The contexts are the passages the generator was given (a corpus span, or text when the
# passage is not a span of the corpus): what faithfulness checks claims against. The citations
# are the answer's own references (a document, a span, and/or a quoted text, and the claim they
# back); whether each resolves to a real span of the corpus is decided once, at import, from
# the corpus as it is then (``valid``, and ``problem`` saying why not): the deterministic check a
# CI gate needs. Both are replaced with their answers.
_V28 = (
    """CREATE TABLE answer_contexts (
        system VARCHAR NOT NULL,
        query_id VARCHAR NOT NULL,
        ordinal INTEGER NOT NULL,
        doc_id VARCHAR,
        start INTEGER,
        "end" INTEGER,
        text VARCHAR,
        PRIMARY KEY (system, query_id, ordinal)
    )""",
    """CREATE TABLE answer_citations (
        system VARCHAR NOT NULL,
        query_id VARCHAR NOT NULL,
        ordinal INTEGER NOT NULL,
        doc_id VARCHAR NOT NULL,
        start INTEGER,
        "end" INTEGER,
        quote VARCHAR,
        claim VARCHAR,
        valid BOOLEAN NOT NULL,
        problem VARCHAR,
        PRIMARY KEY (system, query_id, ordinal)
    )""",
)

# v29 (issue 40): faithfulness by claim decomposition, kept per claim. A check of one answer
# (the judge's model and the decomposition and check prompts' shas, the answer text's sha so a
# replaced answer's check is seen as stale, the tokens it used) and the verdict of each claim it
# found: the final verdict after the verbatim backstop, the judge's own, its quote and
# justification. Per claim, not only a share: which claims fail is what a reviewer reads.
_V29 = (
    """CREATE TABLE faithfulness_checks (
        check_id BIGINT PRIMARY KEY DEFAULT nextval('event_seq'),
        system VARCHAR NOT NULL,
        query_id VARCHAR NOT NULL,
        outcome VARCHAR NOT NULL CHECK (outcome IN ('ok', 'refusal')),
        model VARCHAR NOT NULL,
        decompose_sha VARCHAR NOT NULL,
        check_sha VARCHAR NOT NULL,
        answer_sha VARCHAR NOT NULL,
        input_tokens INTEGER NOT NULL,
        output_tokens INTEGER NOT NULL,
        actor VARCHAR NOT NULL,
        created_at TIMESTAMP NOT NULL
    )""",
    """CREATE TABLE claim_verdicts (
        check_id BIGINT NOT NULL,
        claim_no INTEGER NOT NULL,
        claim VARCHAR NOT NULL,
        verdict VARCHAR NOT NULL CHECK (verdict IN ('supported', 'contradicted', 'insufficient')),
        judge_verdict VARCHAR,
        quote VARCHAR,
        quote_ok BOOLEAN NOT NULL,
        justification VARCHAR,
        PRIMARY KEY (check_id, claim_no)
    )""",
)

# v30 (issue 40): people check the judge's claim verdicts (METHODOLOGY §11.1). A reviewer's
# verdict on one claim of a check, given blind to the judge's, as an event: the current review
# of a (check, claim, reviewer) is the latest row; an undo is a row of its own ('withdrawn'), so
# nothing is overwritten and the claim goes back to the reviewer's queue. Agreement with the
# judge is computed from these rows against claim_verdicts, never stored.
_V30 = (
    """CREATE TABLE claim_reviews (
        review_id BIGINT PRIMARY KEY DEFAULT nextval('event_seq'),
        check_id BIGINT NOT NULL,
        claim_no INTEGER NOT NULL,
        reviewer VARCHAR NOT NULL,
        verdict VARCHAR NOT NULL CHECK (verdict IN ('supported', 'contradicted', 'insufficient', 'withdrawn')),
        created_at TIMESTAMP NOT NULL
    )""",
)

# v31 (issue 40): correctness graded per criterion (METHODOLOGY §10.4, §11.1). One row per grade
# of one criterion of one answer, by a person (``grader`` their username) or by the judge
# (``grader`` its model, ``prompt_sha`` its prompt's). The answer text's sha is kept so a grade
# of text since replaced is seen as stale; the current grade per (system, question, criterion,
# grader) is the latest row. People's grades are the judge's calibration set.
_V31 = (
    """CREATE TABLE answer_grades (
        grade_id BIGINT PRIMARY KEY DEFAULT nextval('event_seq'),
        system VARCHAR NOT NULL,
        query_id VARCHAR NOT NULL,
        criterion_id VARCHAR NOT NULL,
        mark INTEGER NOT NULL CHECK (mark BETWEEN 0 AND 3),
        grader VARCHAR NOT NULL,
        kind VARCHAR NOT NULL CHECK (kind IN ('human', 'judge')),
        prompt_sha VARCHAR,
        reason VARCHAR,
        answer_sha VARCHAR NOT NULL,
        created_at TIMESTAMP NOT NULL,
        CHECK ((kind = 'judge') = (prompt_sha IS NOT NULL))
    )""",
)

# v32 (issue 40, item 1): double authoring of reference answers (METHODOLOGY §3.7 applied to the
# answer layer, as migration 8 applied it to evidence quotes). A lead opens a round over chosen
# questions with two or more authors; each author keeps private drafts and submits once, blind
# to the others until they have submitted; agreement is computed from the submissions, never
# stored; a lead's adjudication (accept one author's answer, or a merged one) writes the
# question's next reference answer revision, which names its round (``round_id``, NULL for
# revisions written outside a round), approved in the same transaction.
_V32 = (
    """CREATE TABLE reference_rounds (
        round_id VARCHAR PRIMARY KEY,
        authors VARCHAR[] NOT NULL,
        note VARCHAR,
        created_by VARCHAR NOT NULL,
        created_at TIMESTAMP NOT NULL
    )""",
    """CREATE TABLE reference_round_questions (
        round_id VARCHAR NOT NULL,
        query_id VARCHAR NOT NULL,
        PRIMARY KEY (round_id, query_id)
    )""",
    """CREATE TABLE reference_round_events (
        event_id BIGINT PRIMARY KEY DEFAULT nextval('event_seq'),
        round_id VARCHAR NOT NULL,
        query_id VARCHAR NOT NULL,
        author VARCHAR NOT NULL,
        op VARCHAR NOT NULL CHECK (op IN ('draft', 'submit')),
        short_answer VARCHAR,
        full_answer VARCHAR,
        evidence VARCHAR NOT NULL DEFAULT '[]',
        criteria VARCHAR NOT NULL DEFAULT '[]',
        created_at TIMESTAMP NOT NULL
    )""",
    """CREATE TABLE reference_round_adjudications (
        event_id BIGINT PRIMARY KEY DEFAULT nextval('event_seq'),
        round_id VARCHAR NOT NULL,
        query_id VARCHAR NOT NULL,
        decision VARCHAR NOT NULL CHECK (decision IN ('accept', 'merge')),
        accepted_author VARCHAR,
        revision BIGINT NOT NULL,
        note VARCHAR,
        actor VARCHAR NOT NULL,
        created_at TIMESTAMP NOT NULL,
        UNIQUE (round_id, query_id),
        CHECK ((decision = 'accept') = (accepted_author IS NOT NULL))
    )""",
    "ALTER TABLE reference_answer_events ADD COLUMN round_id VARCHAR",
)

MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "corpus, queries, strata, rubric, label event tables and views, users", _V1),
    Migration(2, "eval_results: per-query scores of evaluation runs", _V2),
    Migration(3, "runs, run_results, pool_items, pool_sources", _V3),
    Migration(4, "rounds, round_assignments, adjudications and pending_grades views", _V4),
    Migration(5, "answers: system answers for nugget assignment", _V5),
    Migration(6, "calibrations and calibration_items: saved judge calibrations", _V6),
    Migration(7, "transcripts and transcript_draws: failure review", _V7),
    Migration(8, "evidence rounds: evidence_assignments, unsettled questions, frozen_evidence", _V8),
    Migration(9, "current_evidence.author; retired questions leave the unsettled set", _V9),
    Migration(10, "label_receipts (idempotent labels) and sign_in_sessions", _V10),
    Migration(11, "run_events (retired runs) and rubric_seen (the rubric changelog banner)", _V11),
    Migration(12, "verdict_events split into typed event tables with real keys; transcript_draws keyed; "
                  "user_role_events", _V12),
    Migration(13, "grade_state, judging_state, adjudication_state, grade_item_state: current grading state "
                  "kept beside the event log; current/final/disputed/pending grades and adjudications read them",
              _V13),
    Migration(14, "write_seq: every write transaction takes a value (the store's generation for caches)", _V14),
    Migration(15, "run_id -> evaluation_id in eval_results and the transcript tables (\"run\" is a system's run); "
                  "llm_calls purpose bootstrap_questions -> draft_questions",
              _V15),
    Migration(16, "pool_sources without its primary key (its in-memory index was most of a pool build's memory)",
              _V16),
    Migration(17, "queries view: the latest revision by DISTINCT ON (PostgreSQL plans joins on it from real "
                  "estimates)", _V17),
    Migration(18, "answers.outcome (answered / abstained / refused / unknown), answer_outcome_events (a "
                  "reviewer's marks) and the current_answer_outcomes view", _V18),
    Migration(19, "agreement_bar_events (the bar a lead chose); rounds.bar_check and rounds.bar_override (a "
                  "split's bar check and the reason it went ahead below the bar)", _V19),
    Migration(20, "query_revisions.tier and queries.tier: a question's CI tier (smoke / regression / release)",
              _V20),
    Migration(21, "the cascade at work: calibrations.scale/pass_cut/rubric_text; judge_jobs, judge_job_events, "
                  "judge_label_events (the judge's labels, never a person's) and judge_item_state; "
                  "eval_results.labels (human or human+judge)", _V21),
    Migration(22, "transcript_review_events: verdict 'no_failure' (a reviewer confirms an answer the judge passed)",
              _V22),
    Migration(23, "the studio in a team's pipeline: api_tokens and api_token_uses (HTTP API); webhook_endpoints, "
                  "webhook_events, webhook_deliveries, webhook_attempts (a durable outbox); judgment_imports",
              _V23),
    Migration(24, "eval_results.run_level, hit_rule, run_depth, label_judge_models, label_rubric_shas: the "
                  "definitions a recorded number was scored under (hit rule, depth, the judge labels used)", _V24),
    Migration(25, "query_revisions.change_reason: the reason a lead gave for taking a question out of the "
                  "held-out set", _V25),
    Migration(26, "api_token_uses_outcome_created_at: an index for the token audit's retention (refusals and "
                  "answered requests pruned by age, refusals capped)", _V26),
    Migration(27, "the answer layer's labels: reference_answer_events (short and full reference answers anchored "
                  "to evidence, revisions and approvals) and answer_criterion_events (rubric criteria per "
                  "question or stratum), with their current views", _V27),
    Migration(28, "answer_contexts (the passages a system's answer was generated from) and answer_citations "
                  "(what it cited, each checked at import against the corpus)", _V28),
    Migration(29, "faithfulness_checks and claim_verdicts: an answer's claims, each with its verdict against "
                  "the answer's context, and the judge and prompts that decided them", _V29),
    Migration(30, "claim_reviews: a reviewer's verdict on a claim the judge checked, given blind (undo is a "
                  "'withdrawn' row), for the reviewer-judge agreement", _V30),
    Migration(31, "answer_grades: a person's or the judge's mark of one criterion of one answer, with the answer "
                  "text's sha (stale when the text changes) and the judge's prompt sha", _V31),
    Migration(32, "reference-answer rounds: reference_rounds, reference_round_questions, reference_round_events "
                  "(each author's drafts and blind submission), reference_round_adjudications; "
                  "reference_answer_events.round_id (the round an adjudicated revision came from)", _V32),
)

SCHEMA_VERSION = MIGRATIONS[-1].version
