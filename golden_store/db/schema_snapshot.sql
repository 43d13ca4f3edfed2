-- The live store's schema after every migration: a generated snapshot, do not edit.
-- Regenerate: .venv/bin/python -m golden_store.db.schema_snapshot
-- Schema version 32. Migrations (golden_store/db/schema.py):
--   V1: corpus, queries, strata, rubric, label event tables and views, users
--   V2: eval_results: per-query scores of evaluation runs
--   V3: runs, run_results, pool_items, pool_sources
--   V4: rounds, round_assignments, adjudications and pending_grades views
--   V5: answers: system answers for nugget assignment
--   V6: calibrations and calibration_items: saved judge calibrations
--   V7: transcripts and transcript_draws: failure review
--   V8: evidence rounds: evidence_assignments, unsettled questions, frozen_evidence
--   V9: current_evidence.author; retired questions leave the unsettled set
--   V10: label_receipts (idempotent labels) and sign_in_sessions
--   V11: run_events (retired runs) and rubric_seen (the rubric changelog banner)
--   V12: verdict_events split into typed event tables with real keys; transcript_draws keyed; user_role_events
--   V13: grade_state, judging_state, adjudication_state, grade_item_state: current grading state kept beside the event log; current/final/disputed/pending grades and adjudications read them
--   V14: write_seq: every write transaction takes a value (the store's generation for caches)
--   V15: run_id -> evaluation_id in eval_results and the transcript tables ("run" is a system's run); llm_calls purpose bootstrap_questions -> draft_questions
--   V16: pool_sources without its primary key (its in-memory index was most of a pool build's memory)
--   V17: queries view: the latest revision by DISTINCT ON (PostgreSQL plans joins on it from real estimates)
--   V18: answers.outcome (answered / abstained / refused / unknown), answer_outcome_events (a reviewer's marks) and the current_answer_outcomes view
--   V19: agreement_bar_events (the bar a lead chose); rounds.bar_check and rounds.bar_override (a split's bar check and the reason it went ahead below the bar)
--   V20: query_revisions.tier and queries.tier: a question's CI tier (smoke / regression / release)
--   V21: the cascade at work: calibrations.scale/pass_cut/rubric_text; judge_jobs, judge_job_events, judge_label_events (the judge's labels, never a person's) and judge_item_state; eval_results.labels (human or human+judge)
--   V22: transcript_review_events: verdict 'no_failure' (a reviewer confirms an answer the judge passed)
--   V23: the studio in a team's pipeline: api_tokens and api_token_uses (HTTP API); webhook_endpoints, webhook_events, webhook_deliveries, webhook_attempts (a durable outbox); judgment_imports
--   V24: eval_results.run_level, hit_rule, run_depth, label_judge_models, label_rubric_shas: the definitions a recorded number was scored under (hit rule, depth, the judge labels used)
--   V25: query_revisions.change_reason: the reason a lead gave for taking a question out of the held-out set
--   V26: api_token_uses_outcome_created_at: an index for the token audit's retention (refusals and answered requests pruned by age, refusals capped)
--   V27: the answer layer's labels: reference_answer_events (short and full reference answers anchored to evidence, revisions and approvals) and answer_criterion_events (rubric criteria per question or stratum), with their current views
--   V28: answer_contexts (the passages a system's answer was generated from) and answer_citations (what it cited, each checked at import against the corpus)
--   V29: faithfulness_checks and claim_verdicts: an answer's claims, each with its verdict against the answer's context, and the judge and prompts that decided them
--   V30: claim_reviews: a reviewer's verdict on a claim the judge checked, given blind (undo is a 'withdrawn' row), for the reviewer-judge agreement
--   V31: answer_grades: a person's or the judge's mark of one criterion of one answer, with the answer text's sha (stale when the text changes) and the judge's prompt sha
--   V32: reference-answer rounds: reference_rounds, reference_round_questions, reference_round_events (each author's drafts and blind submission), reference_round_adjudications; reference_answer_events.round_id (the round an adjudicated revision came from)

-- ---- sequences --------------------------------------------------------------------

CREATE SEQUENCE audit_seq INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START 1 NO CYCLE;

CREATE SEQUENCE event_seq INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START 1 NO CYCLE;

CREATE SEQUENCE write_seq INCREMENT BY 1 MINVALUE 1 MAXVALUE 9223372036854775807 START 1 NO CYCLE;

-- ---- tables -----------------------------------------------------------------------

-- adjudication_state: V13
CREATE TABLE adjudication_state (
    query_id       VARCHAR,
    doc_id         VARCHAR,
    "start"        INTEGER,
    "end"          INTEGER,
    grade          SMALLINT NOT NULL,
    actor          VARCHAR NOT NULL,
    note           VARCHAR,
    doc_sha256     VARCHAR,
    rubric_version INTEGER,
    created_at     TIMESTAMP NOT NULL,
    event_id       BIGINT NOT NULL,
    PRIMARY KEY(query_id, doc_id, "start", "end")
);

-- agreement_bar_events: V19
CREATE TABLE agreement_bar_events (
    event_id         BIGINT DEFAULT(nextval('event_seq')) PRIMARY KEY,
    graded_measure   VARCHAR NOT NULL,
    graded_threshold DOUBLE NOT NULL,
    binary_threshold DOUBLE NOT NULL,
    note             VARCHAR,
    actor            VARCHAR NOT NULL,
    created_at       TIMESTAMP NOT NULL,
    CHECK((graded_measure IN ('kappa_unweighted', 'kappa_linear', 'kappa_quadratic', 'alpha_ordinal')))
);

-- answer_citations: V28
CREATE TABLE answer_citations (
    "system" VARCHAR,
    query_id VARCHAR,
    ordinal  INTEGER,
    doc_id   VARCHAR NOT NULL,
    "start"  INTEGER,
    "end"    INTEGER,
    "quote"  VARCHAR,
    claim    VARCHAR,
    "valid"  BOOLEAN NOT NULL,
    problem  VARCHAR,
    PRIMARY KEY("system", query_id, ordinal)
);

-- answer_contexts: V28
CREATE TABLE answer_contexts (
    "system" VARCHAR,
    query_id VARCHAR,
    ordinal  INTEGER,
    doc_id   VARCHAR,
    "start"  INTEGER,
    "end"    INTEGER,
    "text"   VARCHAR,
    PRIMARY KEY("system", query_id, ordinal)
);

-- answer_criterion_events: V27
CREATE TABLE answer_criterion_events (
    event_id     BIGINT DEFAULT(nextval('event_seq')) PRIMARY KEY,
    "scope"      VARCHAR NOT NULL,
    scope_id     VARCHAR NOT NULL,
    criterion_id VARCHAR NOT NULL,
    op           VARCHAR NOT NULL,
    "text"       VARCHAR,
    example      VARCHAR,
    weight       DOUBLE,
    scale_max    INTEGER,
    "position"   INTEGER,
    actor        VARCHAR NOT NULL,
    created_at   TIMESTAMP NOT NULL,
    CHECK(("scope" IN ('query', 'stratum'))),
    CHECK((op IN ('write', 'retire'))),
    CHECK(((scale_max IS NULL) OR (scale_max IN (1, 2, 3))))
);

-- answer_grades: V31
CREATE TABLE answer_grades (
    grade_id     BIGINT DEFAULT(nextval('event_seq')) PRIMARY KEY,
    "system"     VARCHAR NOT NULL,
    query_id     VARCHAR NOT NULL,
    criterion_id VARCHAR NOT NULL,
    mark         INTEGER NOT NULL,
    grader       VARCHAR NOT NULL,
    kind         VARCHAR NOT NULL,
    prompt_sha   VARCHAR,
    reason       VARCHAR,
    answer_sha   VARCHAR NOT NULL,
    created_at   TIMESTAMP NOT NULL,
    CHECK((mark BETWEEN 0 AND 3)),
    CHECK((kind IN ('human', 'judge'))),
    CHECK(((kind = 'judge') = (prompt_sha IS NOT NULL)))
);

-- answer_outcome_events: V18
CREATE TABLE answer_outcome_events (
    event_id   BIGINT DEFAULT(nextval('event_seq')) PRIMARY KEY,
    "system"   VARCHAR NOT NULL,
    query_id   VARCHAR NOT NULL,
    outcome    VARCHAR NOT NULL,
    note       VARCHAR,
    actor      VARCHAR NOT NULL,
    created_at TIMESTAMP NOT NULL,
    CHECK((outcome IN ('answered', 'abstained', 'refused', 'withdrawn')))
);

-- answers: V5, altered in V18
CREATE TABLE answers (
    "system"    VARCHAR,
    query_id    VARCHAR,
    answer      VARCHAR NOT NULL,
    imported_at TIMESTAMP NOT NULL,
    imported_by VARCHAR NOT NULL,
    outcome     VARCHAR DEFAULT('unknown') NOT NULL,
    CHECK((outcome IN ('answered', 'abstained', 'refused', 'unknown'))),
    PRIMARY KEY("system", query_id)
);

-- api_token_uses: V23
CREATE TABLE api_token_uses (
    event_id   BIGINT DEFAULT(nextval('audit_seq')) PRIMARY KEY,
    token_id   VARCHAR,
    client     VARCHAR,
    "method"   VARCHAR NOT NULL,
    path       VARCHAR NOT NULL,
    status     INTEGER NOT NULL,
    outcome    VARCHAR NOT NULL,
    created_at TIMESTAMP NOT NULL,
    CHECK((outcome IN ('ok', 'denied', 'unknown', 'revoked', 'expired', 'throttled')))
);

-- api_tokens: V23
CREATE TABLE api_tokens (
    token_id     VARCHAR PRIMARY KEY,
    "name"       VARCHAR NOT NULL,
    token_hash   VARCHAR NOT NULL UNIQUE,
    roles        VARCHAR NOT NULL,
    created_by   VARCHAR NOT NULL,
    created_at   TIMESTAMP NOT NULL,
    expires_at   TIMESTAMP,
    revoked_at   TIMESTAMP,
    revoked_by   VARCHAR,
    last_used_at TIMESTAMP
);

-- calibration_items: V6
CREATE TABLE calibration_items (
    calibration_id VARCHAR,
    item_id        VARCHAR,
    human_label    VARCHAR NOT NULL,
    judge_label    VARCHAR,
    judge_p        DOUBLE,
    stratum        VARCHAR,
    length         INTEGER,
    split          VARCHAR NOT NULL,
    PRIMARY KEY(calibration_id, item_id)
);

-- calibrations: V6, altered in V21
CREATE TABLE calibrations (
    calibration_id VARCHAR PRIMARY KEY,
    judge_model    VARCHAR NOT NULL,
    rubric_sha     VARCHAR NOT NULL,
    question_sha   VARCHAR,
    "source"       VARCHAR NOT NULL,
    split_seed     INTEGER NOT NULL,
    fit_share      DOUBLE NOT NULL,
    band_low       DOUBLE,
    band_high      DOUBLE,
    max_missed_bad DOUBLE,
    max_false_fail DOUBLE,
    isotonic       VARCHAR,
    report         VARCHAR NOT NULL,
    note           VARCHAR,
    actor          VARCHAR NOT NULL,
    created_at     TIMESTAMP NOT NULL,
    scale          VARCHAR,
    pass_cut       INTEGER,
    rubric_text    VARCHAR
);

-- claim_reviews: V30
CREATE TABLE claim_reviews (
    review_id  BIGINT DEFAULT(nextval('event_seq')) PRIMARY KEY,
    check_id   BIGINT NOT NULL,
    claim_no   INTEGER NOT NULL,
    reviewer   VARCHAR NOT NULL,
    verdict    VARCHAR NOT NULL,
    created_at TIMESTAMP NOT NULL,
    CHECK((verdict IN ('supported', 'contradicted', 'insufficient', 'withdrawn')))
);

-- claim_verdicts: V29
CREATE TABLE claim_verdicts (
    check_id      BIGINT,
    claim_no      INTEGER,
    claim         VARCHAR NOT NULL,
    verdict       VARCHAR NOT NULL,
    judge_verdict VARCHAR,
    "quote"       VARCHAR,
    quote_ok      BOOLEAN NOT NULL,
    justification VARCHAR,
    CHECK((verdict IN ('supported', 'contradicted', 'insufficient'))),
    PRIMARY KEY(check_id, claim_no)
);

-- corpus_events: V1
CREATE TABLE corpus_events (
    event_id             BIGINT DEFAULT(nextval('event_seq')) PRIMARY KEY,
    doc_id               VARCHAR NOT NULL,
    "action"             VARCHAR NOT NULL,
    old_canonical_sha256 VARCHAR,
    new_canonical_sha256 VARCHAR NOT NULL,
    source_path          VARCHAR,
    actor                VARCHAR NOT NULL,
    created_at           TIMESTAMP NOT NULL,
    CHECK(("action" IN ('add', 'replace')))
);

-- documents: V1
CREATE TABLE documents (
    doc_id           VARCHAR PRIMARY KEY,
    title            VARCHAR,
    source_path      VARCHAR,
    source_format    VARCHAR NOT NULL,
    raw_text         VARCHAR NOT NULL,
    canonical_text   VARCHAR NOT NULL,
    raw_sha256       VARCHAR NOT NULL,
    canonical_sha256 VARCHAR NOT NULL,
    imported_at      TIMESTAMP NOT NULL,
    imported_by      VARCHAR NOT NULL
);

-- eval_results: V2, altered in V15, V21, V24
CREATE TABLE eval_results (
    evaluation_id      VARCHAR,
    ts                 TIMESTAMP NOT NULL,
    "system"           VARCHAR,
    git_sha            VARCHAR,
    dataset_version    VARCHAR NOT NULL,
    corpus_digest      VARCHAR,
    config_sha         VARCHAR,
    judge_model        VARCHAR,
    rubric_sha         VARCHAR,
    metric_impl_sha    VARCHAR NOT NULL,
    query_id           VARCHAR,
    stratum            VARCHAR,
    trial              INTEGER,
    metric             VARCHAR,
    "value"            DOUBLE NOT NULL,
    judged_fraction    DOUBLE,
    latency_ms         INTEGER,
    tokens_in          INTEGER,
    tokens_out         INTEGER,
    cost_usd           DOUBLE,
    trace_id           VARCHAR,
    labels             VARCHAR,
    run_level          VARCHAR,
    hit_rule           VARCHAR,
    run_depth          INTEGER,
    label_judge_models VARCHAR,
    label_rubric_shas  VARCHAR,
    PRIMARY KEY(evaluation_id, query_id, metric, trial)
);

-- evidence_assignments: V8
CREATE TABLE evidence_assignments (
    round_id  VARCHAR,
    annotator VARCHAR,
    query_id  VARCHAR,
    PRIMARY KEY(round_id, annotator, query_id)
);

-- evidence_events: V1
CREATE TABLE evidence_events (
    event_id        BIGINT DEFAULT(nextval('event_seq')) PRIMARY KEY,
    query_id        VARCHAR NOT NULL,
    evidence_id     VARCHAR NOT NULL,
    op              VARCHAR NOT NULL,
    "quote"         VARCHAR,
    doc_id          VARCHAR,
    "start"         INTEGER,
    "end"           INTEGER,
    canonical_start INTEGER,
    canonical_end   INTEGER,
    doc_sha256      VARCHAR,
    match_kind      VARCHAR,
    score           DOUBLE,
    actor           VARCHAR NOT NULL,
    created_at      TIMESTAMP NOT NULL,
    rubric_version  INTEGER,
    round_id        VARCHAR,
    note            VARCHAR,
    CHECK((op IN ('set', 'retract')))
);

-- evidence_no_answer_events: V12
CREATE TABLE evidence_no_answer_events (
    event_id       BIGINT DEFAULT(nextval('event_seq')) PRIMARY KEY,
    query_id       VARCHAR NOT NULL,
    op             VARCHAR NOT NULL,
    note           VARCHAR,
    actor          VARCHAR NOT NULL,
    created_at     TIMESTAMP NOT NULL,
    rubric_version INTEGER,
    CHECK((op IN ('no_answer', 'withdrawn')))
);

-- evidence_settlement_events: V12
CREATE TABLE evidence_settlement_events (
    event_id       BIGINT DEFAULT(nextval('event_seq')) PRIMARY KEY,
    query_id       VARCHAR NOT NULL,
    decision       VARCHAR NOT NULL,
    note           VARCHAR,
    actor          VARCHAR NOT NULL,
    created_at     TIMESTAMP NOT NULL,
    rubric_version INTEGER,
    CHECK(((decision IN ('keep_all', 'no_answer')) OR (decision ~~ 'keep:%')))
);

-- faithfulness_checks: V29
CREATE TABLE faithfulness_checks (
    check_id      BIGINT DEFAULT(nextval('event_seq')) PRIMARY KEY,
    "system"      VARCHAR NOT NULL,
    query_id      VARCHAR NOT NULL,
    outcome       VARCHAR NOT NULL,
    model         VARCHAR NOT NULL,
    decompose_sha VARCHAR NOT NULL,
    check_sha     VARCHAR NOT NULL,
    answer_sha    VARCHAR NOT NULL,
    input_tokens  INTEGER NOT NULL,
    output_tokens INTEGER NOT NULL,
    actor         VARCHAR NOT NULL,
    created_at    TIMESTAMP NOT NULL,
    CHECK((outcome IN ('ok', 'refusal')))
);

-- grade_events: V1
CREATE TABLE grade_events (
    event_id       BIGINT DEFAULT(nextval('event_seq')) PRIMARY KEY,
    query_id       VARCHAR NOT NULL,
    doc_id         VARCHAR NOT NULL,
    "start"        INTEGER NOT NULL,
    "end"          INTEGER NOT NULL,
    doc_sha256     VARCHAR,
    op             VARCHAR NOT NULL,
    grade          SMALLINT,
    actor          VARCHAR NOT NULL,
    created_at     TIMESTAMP NOT NULL,
    rubric_version INTEGER,
    round_id       VARCHAR,
    note           VARCHAR,
    CHECK((op IN ('grade', 'retract', 'skip', 'unsure', 'adjudicate'))),
    CHECK(((grade IS NULL) OR (grade BETWEEN 0 AND 3))),
    CHECK(((op IN ('grade', 'adjudicate')) = (grade IS NOT NULL)))
);

-- grade_item_state: V13
CREATE TABLE grade_item_state (
    query_id        VARCHAR,
    doc_id          VARCHAR,
    "start"         INTEGER,
    "end"           INTEGER,
    n_graded        BIGINT NOT NULL,
    n_distinct      BIGINT NOT NULL,
    grade           SMALLINT,
    actors          VARCHAR,
    rubric_version  INTEGER,
    first_graded_at TIMESTAMP,
    last_graded_at  TIMESTAMP,
    PRIMARY KEY(query_id, doc_id, "start", "end")
);

-- grade_state: V13
CREATE TABLE grade_state (
    query_id       VARCHAR,
    doc_id         VARCHAR,
    "start"        INTEGER,
    "end"          INTEGER,
    actor          VARCHAR,
    op             VARCHAR NOT NULL,
    grade          SMALLINT,
    doc_sha256     VARCHAR,
    rubric_version INTEGER,
    round_id       VARCHAR,
    note           VARCHAR,
    created_at     TIMESTAMP NOT NULL,
    event_id       BIGINT NOT NULL,
    CHECK((op IN ('grade', 'retract'))),
    CHECK(((op = 'grade') = (grade IS NOT NULL))),
    PRIMARY KEY(query_id, doc_id, "start", "end", actor)
);

-- judge_item_state: V21
CREATE TABLE judge_item_state (
    query_id       VARCHAR,
    doc_id         VARCHAR,
    "start"        INTEGER,
    "end"          INTEGER,
    event_id       BIGINT NOT NULL,
    job_id         VARCHAR NOT NULL,
    calibration_id VARCHAR NOT NULL,
    outcome        VARCHAR NOT NULL,
    route          VARCHAR NOT NULL,
    grade          INTEGER,
    created_at     TIMESTAMP NOT NULL,
    PRIMARY KEY(query_id, doc_id, "start", "end")
);

-- judge_job_events: V21
CREATE TABLE judge_job_events (
    event_id   BIGINT DEFAULT(nextval('event_seq')) PRIMARY KEY,
    job_id     VARCHAR NOT NULL,
    status     VARCHAR NOT NULL,
    note       VARCHAR,
    actor      VARCHAR NOT NULL,
    created_at TIMESTAMP NOT NULL,
    CHECK((status IN ('started', 'paused', 'resumed', 'done', 'failed')))
);

-- judge_jobs: V21
CREATE TABLE judge_jobs (
    job_id         VARCHAR PRIMARY KEY,
    calibration_id VARCHAR NOT NULL,
    judge_model    VARCHAR NOT NULL,
    rubric_sha     VARCHAR NOT NULL,
    "mode"         VARCHAR NOT NULL,
    sample_share   DOUBLE NOT NULL,
    sample_seed    INTEGER NOT NULL,
    gate_kappa     DOUBLE,
    gate_override  VARCHAR,
    estimate       VARCHAR,
    actor          VARCHAR NOT NULL,
    created_at     TIMESTAMP NOT NULL,
    CHECK(("mode" IN ('batch', 'direct')))
);

-- judge_label_events: V21
CREATE TABLE judge_label_events (
    event_id       BIGINT DEFAULT(nextval('event_seq')) PRIMARY KEY,
    job_id         VARCHAR NOT NULL,
    calibration_id VARCHAR NOT NULL,
    query_id       VARCHAR NOT NULL,
    doc_id         VARCHAR NOT NULL,
    "start"        INTEGER NOT NULL,
    "end"          INTEGER NOT NULL,
    outcome        VARCHAR NOT NULL,
    route          VARCHAR NOT NULL,
    grade          INTEGER,
    p_fail         DOUBLE,
    p_used         DOUBLE,
    reason         VARCHAR,
    justification  VARCHAR,
    model          VARCHAR NOT NULL,
    rubric_sha     VARCHAR NOT NULL,
    prompt_sha     VARCHAR,
    doc_sha256     VARCHAR,
    batch_id       VARCHAR,
    created_at     TIMESTAMP NOT NULL,
    CHECK((outcome IN ('labeled', 'escalated', 'refused', 'error'))),
    CHECK((route IN ('judge', 'human', 'sample')))
);

-- judging_state: V13
CREATE TABLE judging_state (
    actor    VARCHAR,
    query_id VARCHAR,
    doc_id   VARCHAR,
    "start"  INTEGER,
    "end"    INTEGER,
    op       VARCHAR NOT NULL,
    event_id BIGINT NOT NULL,
    CHECK((op IN ('grade', 'skip', 'unsure', 'retract'))),
    PRIMARY KEY(actor, query_id, doc_id, "start", "end")
);

-- judgment_imports: V23
CREATE TABLE judgment_imports (
    import_id   VARCHAR PRIMARY KEY,
    "source"    VARCHAR NOT NULL,
    file_name   VARCHAR NOT NULL,
    fmt         VARCHAR NOT NULL,
    file_sha256 VARCHAR NOT NULL,
    n_judgments INTEGER NOT NULL,
    actor       VARCHAR NOT NULL,
    created_at  TIMESTAMP NOT NULL
);

-- label_receipts: V10
CREATE TABLE label_receipts (
    label_id    VARCHAR PRIMARY KEY,
    actor       VARCHAR NOT NULL,
    surface     VARCHAR NOT NULL,
    item        VARCHAR NOT NULL,
    "action"    VARCHAR NOT NULL,
    event_id    BIGINT,
    recorded_at TIMESTAMP NOT NULL
);

-- llm_calls: V1
CREATE TABLE llm_calls (
    call_id                     BIGINT DEFAULT(nextval('event_seq')) PRIMARY KEY,
    purpose                     VARCHAR NOT NULL,
    item                        VARCHAR NOT NULL,
    model                       VARCHAR NOT NULL,
    prompt_sha                  VARCHAR NOT NULL,
    outcome                     VARCHAR NOT NULL,
    input_tokens                INTEGER NOT NULL,
    output_tokens               INTEGER NOT NULL,
    cache_creation_input_tokens INTEGER NOT NULL,
    cache_read_input_tokens     INTEGER NOT NULL,
    cost_usd                    DOUBLE,
    actor                       VARCHAR NOT NULL,
    created_at                  TIMESTAMP NOT NULL
);

-- nugget_events: V1
CREATE TABLE nugget_events (
    event_id       BIGINT DEFAULT(nextval('event_seq')) PRIMARY KEY,
    query_id       VARCHAR NOT NULL,
    nugget_id      VARCHAR NOT NULL,
    op             VARCHAR NOT NULL,
    "text"         VARCHAR,
    importance     VARCHAR,
    "position"     INTEGER,
    "quote"        VARCHAR,
    doc_id         VARCHAR,
    "start"        INTEGER,
    "end"          INTEGER,
    doc_sha256     VARCHAR,
    actor          VARCHAR NOT NULL,
    created_at     TIMESTAMP NOT NULL,
    rubric_version INTEGER,
    model          VARCHAR,
    prompt_sha     VARCHAR,
    CHECK((op IN ('add', 'edit', 'delete', 'approve'))),
    CHECK(((importance IS NULL) OR (importance IN ('vital', 'okay'))))
);

-- nugget_support_events: V12
CREATE TABLE nugget_support_events (
    event_id       BIGINT DEFAULT(nextval('event_seq')) PRIMARY KEY,
    "system"       VARCHAR NOT NULL,
    query_id       VARCHAR NOT NULL,
    nugget_id      VARCHAR NOT NULL,
    "label"        VARCHAR NOT NULL,
    note           VARCHAR,
    actor          VARCHAR NOT NULL,
    created_at     TIMESTAMP NOT NULL,
    rubric_version INTEGER,
    CHECK(("label" IN ('support', 'partial', 'none', 'withdrawn')))
);

-- pool_items: V3
CREATE TABLE pool_items (
    query_id VARCHAR,
    doc_id   VARCHAR,
    "start"  INTEGER,
    "end"    INTEGER,
    depth    INTEGER NOT NULL,
    added_at TIMESTAMP NOT NULL,
    added_by VARCHAR NOT NULL,
    PRIMARY KEY(query_id, doc_id, "start", "end")
);

-- pool_sources: V3, altered in V16
CREATE TABLE pool_sources (
    query_id VARCHAR NOT NULL,
    doc_id   VARCHAR NOT NULL,
    "start"  INTEGER NOT NULL,
    "end"    INTEGER NOT NULL,
    "system" VARCHAR NOT NULL,
    rank     INTEGER NOT NULL
);

-- query_revisions: V1, altered in V20, V25
CREATE TABLE query_revisions (
    event_id             BIGINT DEFAULT(nextval('event_seq')) PRIMARY KEY,
    query_id             VARCHAR NOT NULL,
    "text"               VARCHAR NOT NULL,
    stratum              VARCHAR NOT NULL,
    answerable           BOOLEAN NOT NULL,
    "source"             VARCHAR NOT NULL,
    created_date         DATE NOT NULL,
    held_out             BOOLEAN NOT NULL,
    notes                VARCHAR NOT NULL,
    retired              BOOLEAN DEFAULT(false) NOT NULL,
    generator_model      VARCHAR,
    generator_prompt_sha VARCHAR,
    actor                VARCHAR NOT NULL,
    created_at           TIMESTAMP NOT NULL,
    tier                 VARCHAR,
    change_reason        VARCHAR
);

-- reference_answer_events: V27, altered in V32
CREATE TABLE reference_answer_events (
    event_id     BIGINT DEFAULT(nextval('event_seq')) PRIMARY KEY,
    query_id     VARCHAR NOT NULL,
    op           VARCHAR NOT NULL,
    short_answer VARCHAR,
    full_answer  VARCHAR,
    evidence     VARCHAR DEFAULT('[]') NOT NULL,
    "source"     VARCHAR NOT NULL,
    model        VARCHAR,
    prompt_sha   VARCHAR,
    note         VARCHAR,
    actor        VARCHAR NOT NULL,
    created_at   TIMESTAMP NOT NULL,
    round_id     VARCHAR,
    CHECK((op IN ('write', 'approve', 'retire'))),
    CHECK(("source" IN ('person', 'llm')))
);

-- reference_round_adjudications: V32
CREATE TABLE reference_round_adjudications (
    event_id        BIGINT DEFAULT(nextval('event_seq')) PRIMARY KEY,
    round_id        VARCHAR NOT NULL,
    query_id        VARCHAR NOT NULL,
    decision        VARCHAR NOT NULL,
    accepted_author VARCHAR,
    revision        BIGINT NOT NULL,
    note            VARCHAR,
    actor           VARCHAR NOT NULL,
    created_at      TIMESTAMP NOT NULL,
    CHECK((decision IN ('accept', 'merge'))),
    UNIQUE(round_id, query_id),
    CHECK(((decision = 'accept') = (accepted_author IS NOT NULL)))
);

-- reference_round_events: V32
CREATE TABLE reference_round_events (
    event_id     BIGINT DEFAULT(nextval('event_seq')) PRIMARY KEY,
    round_id     VARCHAR NOT NULL,
    query_id     VARCHAR NOT NULL,
    author       VARCHAR NOT NULL,
    op           VARCHAR NOT NULL,
    short_answer VARCHAR,
    full_answer  VARCHAR,
    evidence     VARCHAR DEFAULT('[]') NOT NULL,
    criteria     VARCHAR DEFAULT('[]') NOT NULL,
    created_at   TIMESTAMP NOT NULL,
    CHECK((op IN ('draft', 'submit')))
);

-- reference_round_questions: V32
CREATE TABLE reference_round_questions (
    round_id VARCHAR,
    query_id VARCHAR,
    PRIMARY KEY(round_id, query_id)
);

-- reference_rounds: V32
CREATE TABLE reference_rounds (
    round_id   VARCHAR PRIMARY KEY,
    authors    VARCHAR[] NOT NULL,
    note       VARCHAR,
    created_by VARCHAR NOT NULL,
    created_at TIMESTAMP NOT NULL
);

-- round_assignments: V4
CREATE TABLE round_assignments (
    round_id  VARCHAR,
    annotator VARCHAR,
    query_id  VARCHAR,
    doc_id    VARCHAR,
    "start"   INTEGER,
    "end"     INTEGER,
    PRIMARY KEY(round_id, annotator, query_id, doc_id, "start", "end")
);

-- rounds: V4, altered in V8, V19
CREATE TABLE rounds (
    round_id     VARCHAR PRIMARY KEY,
    kind         VARCHAR NOT NULL,
    annotators   VARCHAR[] NOT NULL,
    overlap      DOUBLE,
    seed         INTEGER,
    n_items      INTEGER NOT NULL,
    note         VARCHAR,
    created_by   VARCHAR NOT NULL,
    created_at   TIMESTAMP NOT NULL,
    item_kind    VARCHAR DEFAULT('grade'),
    bar_check    VARCHAR,
    bar_override VARCHAR,
    CHECK((kind IN ('calibration', 'split')))
);

-- rubric_seen: V11
CREATE TABLE rubric_seen (
    username  VARCHAR,
    "version" INTEGER,
    seen_at   TIMESTAMP NOT NULL,
    PRIMARY KEY(username, "version")
);

-- rubric_versions: V1
CREATE TABLE rubric_versions (
    "version"  INTEGER PRIMARY KEY,
    "text"     VARCHAR NOT NULL,
    sha256     VARCHAR NOT NULL,
    changelog  VARCHAR NOT NULL,
    actor      VARCHAR NOT NULL,
    created_at TIMESTAMP NOT NULL
);

-- run_events: V11
CREATE TABLE run_events (
    event_id   BIGINT DEFAULT(nextval('event_seq')) PRIMARY KEY,
    "system"   VARCHAR NOT NULL,
    op         VARCHAR NOT NULL,
    reason     VARCHAR,
    actor      VARCHAR NOT NULL,
    created_at TIMESTAMP NOT NULL,
    CHECK((op IN ('retire', 'restore')))
);

-- run_results: V3
CREATE TABLE run_results (
    "system"   VARCHAR,
    query_id   VARCHAR,
    rank       INTEGER,
    score      DOUBLE,
    doc_id     VARCHAR NOT NULL,
    "start"    INTEGER NOT NULL,
    "end"      INTEGER NOT NULL,
    match_kind VARCHAR NOT NULL,
    PRIMARY KEY("system", query_id, rank)
);

-- runs: V3
CREATE TABLE runs (
    "system"      VARCHAR PRIMARY KEY,
    format        VARCHAR NOT NULL,
    source_name   VARCHAR,
    source_sha256 VARCHAR NOT NULL,
    n_results     INTEGER NOT NULL,
    imported_at   TIMESTAMP NOT NULL,
    imported_by   VARCHAR NOT NULL
);

-- schema_migrations: created by the store itself (golden_store/db/store.py)
CREATE TABLE schema_migrations (
    "version"   INTEGER PRIMARY KEY,
    description VARCHAR NOT NULL,
    applied_at  TIMESTAMP NOT NULL
);

-- sign_in_sessions: V10
CREATE TABLE sign_in_sessions (
    token_sha256 VARCHAR PRIMARY KEY,
    username     VARCHAR NOT NULL,
    created_at   TIMESTAMP NOT NULL,
    expires_at   TIMESTAMP NOT NULL,
    revoked_at   TIMESTAMP
);

-- store_meta: V1
CREATE TABLE store_meta (
    "key"   VARCHAR PRIMARY KEY,
    "value" VARCHAR NOT NULL
);

-- strata: V1
CREATE TABLE strata (
    "name"      VARCHAR PRIMARY KEY,
    description VARCHAR NOT NULL,
    builtin     BOOLEAN NOT NULL,
    created_at  TIMESTAMP NOT NULL,
    created_by  VARCHAR NOT NULL
);

-- transcript_draws: V7, altered in V12, V15
CREATE TABLE transcript_draws (
    draw_id       VARCHAR,
    evaluation_id VARCHAR,
    query_id      VARCHAR,
    trial         INTEGER,
    "position"    INTEGER NOT NULL,
    seed          INTEGER NOT NULL,
    actor         VARCHAR NOT NULL,
    created_at    TIMESTAMP NOT NULL,
    PRIMARY KEY(draw_id, evaluation_id, query_id, trial)
);

-- transcript_resolution_events: V12, altered in V15
CREATE TABLE transcript_resolution_events (
    event_id       BIGINT DEFAULT(nextval('event_seq')) PRIMARY KEY,
    evaluation_id  VARCHAR NOT NULL,
    query_id       VARCHAR NOT NULL,
    trial          INTEGER NOT NULL,
    resolution     VARCHAR NOT NULL,
    note           VARCHAR,
    actor          VARCHAR NOT NULL,
    created_at     TIMESTAMP NOT NULL,
    rubric_version INTEGER,
    CHECK((resolution IN ('label_fixed', 'judge_fixed', 'reviewer_wrong')))
);

-- transcript_review_events: V12, altered in V15
CREATE TABLE transcript_review_events (
    event_id       BIGINT DEFAULT(nextval('event_seq')) PRIMARY KEY,
    evaluation_id  VARCHAR NOT NULL,
    query_id       VARCHAR NOT NULL,
    trial          INTEGER NOT NULL,
    verdict        VARCHAR NOT NULL,
    failure_class  VARCHAR,
    note           VARCHAR,
    actor          VARCHAR NOT NULL,
    created_at     TIMESTAMP NOT NULL,
    rubric_version INTEGER,
    CHECK((verdict IN ('system_failure', 'grader_failure', 'ambiguous', 'no_failure', 'withdrawn')))
);

-- transcripts: V7, altered in V15
CREATE TABLE transcripts (
    evaluation_id       VARCHAR,
    query_id            VARCHAR,
    trial               INTEGER,
    "source"            VARCHAR NOT NULL,
    question            VARCHAR NOT NULL,
    stratum             VARCHAR,
    passed              BOOLEAN NOT NULL,
    failure_type        VARCHAR,
    metrics             VARCHAR,
    retrieved           VARCHAR,
    answer              VARCHAR,
    judge_verdict       VARCHAR,
    judge_justification VARCHAR,
    trace_id            VARCHAR,
    imported_at         TIMESTAMP NOT NULL,
    imported_by         VARCHAR NOT NULL,
    CHECK(("source" IN ('eval_run', 'production_log'))),
    PRIMARY KEY(evaluation_id, query_id, trial)
);

-- user_role_events: V12
CREATE TABLE user_role_events (
    event_id   BIGINT DEFAULT(nextval('event_seq')) PRIMARY KEY,
    username   VARCHAR NOT NULL,
    op         VARCHAR NOT NULL,
    "role"     VARCHAR NOT NULL,
    note       VARCHAR,
    actor      VARCHAR NOT NULL,
    created_at TIMESTAMP NOT NULL,
    CHECK((op IN ('grant', 'revoke')))
);

-- users: V1
CREATE TABLE users (
    username      VARCHAR PRIMARY KEY,
    display_name  VARCHAR NOT NULL,
    roles         VARCHAR[] NOT NULL,
    password_hash VARCHAR,
    created_at    TIMESTAMP NOT NULL,
    created_by    VARCHAR NOT NULL,
    disabled      BOOLEAN DEFAULT(false) NOT NULL
);

-- webhook_attempts: V23
CREATE TABLE webhook_attempts (
    attempt_id  BIGINT DEFAULT(nextval('audit_seq')) PRIMARY KEY,
    event_id    VARCHAR NOT NULL,
    endpoint_id VARCHAR NOT NULL,
    attempt     INTEGER NOT NULL,
    status_code INTEGER,
    "error"     VARCHAR,
    duration_ms DOUBLE,
    created_at  TIMESTAMP NOT NULL
);

-- webhook_deliveries: V23
CREATE TABLE webhook_deliveries (
    event_id         VARCHAR,
    endpoint_id      VARCHAR,
    status           VARCHAR NOT NULL,
    attempts         INTEGER NOT NULL,
    next_attempt_at  TIMESTAMP,
    last_attempt_at  TIMESTAMP,
    last_status_code INTEGER,
    last_error       VARCHAR,
    delivered_at     TIMESTAMP,
    CHECK((status IN ('pending', 'delivered', 'failed'))),
    PRIMARY KEY(event_id, endpoint_id)
);

-- webhook_endpoints: V23
CREATE TABLE webhook_endpoints (
    endpoint_id VARCHAR PRIMARY KEY,
    url         VARCHAR NOT NULL,
    "secret"    VARCHAR NOT NULL,
    event_types VARCHAR NOT NULL,
    description VARCHAR,
    created_by  VARCHAR NOT NULL,
    created_at  TIMESTAMP NOT NULL,
    disabled_at TIMESTAMP,
    disabled_by VARCHAR
);

-- webhook_events: V23
CREATE TABLE webhook_events (
    event_id   VARCHAR PRIMARY KEY,
    event_type VARCHAR NOT NULL,
    payload    VARCHAR NOT NULL,
    actor      VARCHAR,
    created_at TIMESTAMP NOT NULL
);

-- ---- views (latest definitions) -----------------------------------------------------

-- adjudications: V13, first defined in V4
CREATE VIEW adjudications AS
SELECT query_id, doc_id, start, "end", grade, actor, note AS rationale, rubric_version,
       created_at, event_id
FROM adjudication_state;

-- current_answer_criteria: V27
CREATE VIEW current_answer_criteria AS
SELECT scope, scope_id, criterion_id, text, example, weight, scale_max, position, actor, created_at,
       event_id AS revision
FROM (
    SELECT *, row_number() OVER (PARTITION BY scope, scope_id, criterion_id ORDER BY event_id DESC) AS rn
    FROM answer_criterion_events
) AS latest WHERE rn = 1 AND op = 'write';

-- current_answer_outcomes: V18
CREATE VIEW current_answer_outcomes AS
SELECT a.system, a.query_id, coalesce(m.outcome, a.outcome) AS outcome, a.outcome AS imported_outcome,
       CASE WHEN m.outcome IS NOT NULL THEN 'marked' WHEN a.outcome <> 'unknown' THEN 'imported'
            ELSE 'unmarked' END AS basis,
       m.actor AS marked_by, m.created_at AS marked_at, m.note, m.event_id
FROM answers a LEFT JOIN (
    SELECT system, query_id, outcome, note, actor, created_at, event_id FROM (
        SELECT *, row_number() OVER (PARTITION BY system, query_id ORDER BY event_id DESC) AS rn
        FROM answer_outcome_events
    ) AS latest WHERE rn = 1 AND outcome <> 'withdrawn'
) AS m ON m.system = a.system AND m.query_id = a.query_id;

-- current_evidence: V9, first defined in V1
CREATE VIEW current_evidence AS
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
WHERE c.rn = 1 AND c.op = 'set';

-- current_grades: V13, first defined in V1
CREATE VIEW current_grades AS
SELECT query_id, doc_id, start, "end", doc_sha256, actor, grade, rubric_version, round_id,
       note, created_at, event_id
FROM grade_state WHERE op = 'grade';

-- current_nugget_support: V12
CREATE VIEW current_nugget_support AS
SELECT system, query_id, nugget_id, label, note, actor, created_at, event_id FROM (
    SELECT *, row_number() OVER (PARTITION BY system, query_id, nugget_id ORDER BY event_id DESC) AS rn
    FROM nugget_support_events
) WHERE rn = 1 AND label <> 'withdrawn';

-- current_nuggets: V1
CREATE VIEW current_nuggets AS
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
WHERE c.rn = 1 AND c.op <> 'delete';

-- current_reference_answers: V27
CREATE VIEW current_reference_answers AS
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
FROM written w LEFT JOIN approvals a ON a.query_id = w.query_id;

-- current_transcript_reviews: V22, first defined in V12
CREATE VIEW current_transcript_reviews AS
SELECT evaluation_id, query_id, trial, verdict, failure_class, note, actor, created_at, event_id FROM (
    SELECT *, row_number() OVER (PARTITION BY evaluation_id, query_id, trial ORDER BY event_id DESC) AS rn
    FROM transcript_review_events
) WHERE rn = 1 AND verdict <> 'withdrawn';

-- disputed_grades: V13, first defined in V1
CREATE VIEW disputed_grades AS
SELECT query_id, doc_id, start, "end", n_graded AS n_annotators, n_distinct
FROM grade_item_state WHERE n_distinct > 1;

-- final_grades: V13, first defined in V1
CREATE VIEW final_grades AS
SELECT query_id, doc_id, start, "end", grade, actor AS decided_by, rubric_version,
       created_at, 'adjudicated' AS basis FROM adjudication_state
UNION ALL
SELECT i.query_id, i.doc_id, i.start, i."end", i.grade, i.actors, i.rubric_version,
       i.last_graded_at, 'agreed' AS basis
FROM grade_item_state i
WHERE i.n_distinct = 1 AND NOT EXISTS (
    SELECT 1 FROM adjudication_state a WHERE a.query_id = i.query_id AND a.doc_id = i.doc_id
    AND a.start = i.start AND a."end" = i."end");

-- pending_grades: V13, first defined in V4
CREATE VIEW pending_grades AS
SELECT i.query_id, i.doc_id, i.start, i."end", i.n_graded AS n_annotators, i.n_distinct
FROM grade_item_state i
WHERE i.n_distinct > 1 AND NOT EXISTS (
    SELECT 1 FROM adjudication_state a WHERE a.query_id = i.query_id AND a.doc_id = i.doc_id
    AND a.start = i.start AND a."end" = i."end");

-- queries: V20, first defined in V1
CREATE VIEW queries AS
SELECT query_id, text, stratum, answerable, source, created_date, held_out, notes,
       generator_model, generator_prompt_sha,
       actor AS last_edited_by, created_at AS last_edited_at, event_id AS revision, tier
FROM (
    SELECT DISTINCT ON (query_id) * FROM query_revisions ORDER BY query_id, event_id DESC
) AS latest WHERE NOT retired;

-- retired_runs: V11
CREATE VIEW retired_runs AS
SELECT system, reason, actor AS retired_by, created_at AS retired_at FROM (
    SELECT *, row_number() OVER (PARTITION BY system ORDER BY event_id DESC) AS rn FROM run_events
) SEMI JOIN runs USING (system) WHERE rn = 1 AND op = 'retire';

-- unsettled_evidence_questions: V12, first defined in V8
CREATE VIEW unsettled_evidence_questions AS
SELECT DISTINCT a.query_id FROM evidence_assignments a
WHERE EXISTS (SELECT 1 FROM queries q WHERE q.query_id = a.query_id)
  AND NOT EXISTS (SELECT 1 FROM evidence_settlement_events s WHERE s.query_id = a.query_id);

-- frozen_evidence: V9, first defined in V8
CREATE VIEW frozen_evidence AS
SELECT * FROM current_evidence ANTI JOIN unsettled_evidence_questions USING (query_id);

-- ---- indexes ----------------------------------------------------------------------

CREATE INDEX api_token_uses_outcome_created_at ON api_token_uses(outcome, created_at);
