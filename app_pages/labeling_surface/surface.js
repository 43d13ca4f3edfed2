// The client-side labeling surface (Judge, Transcripts review): a prefetched queue of items
// painted at once on a key, labels sent to Python with an id of their own and a digest of what
// was shown, re-sent until acknowledged (they survive a reconnect, a server restart, a refresh
// and closing the tab: the outbox is in localStorage), undo, browsing back through one's own
// labels, a key overlay.
//
// The queue tops up ahead: when fewer than `low` items wait (Python says how many), the
// surface asks for more (a send with no labels). If it runs empty anyway, it says the next
// items are loading, and a key pressed then labels nothing and says so (never an item the
// person did not see). The root's data-* attributes (uid, state, pending, saved, refused,
// queue, unused) are documented in __init__.py for tests and benchmarks.
//
// The direct channel (issue 29): when the page gives a label pass (`data.direct`), batches go
// to the server's label endpoint (annotator/labeling/label_channel.py) with fetch, and its answer carries
// the acknowledgements, the next items when the queue ran low, and progress: no Streamlit
// rerun per batch. Anything the channel refuses or cannot reach goes through Streamlit as
// before (the label ids are the same, so a label sent both ways is written once).
//
// Every piece of item text is set with textContent: corpus text is untrusted and never HTML.

const RESEND_MS = 1500;
const WANT_MS = 1500;      // at most one "more items, please" per this long
const HEARTBEAT_MS = 1000; // a tab with pending labels says it is alive this often
const ORPHAN_MS = 10000;   // an outbox not refreshed for this long belongs to a closed tab
const RELOAD_AFTER_MS = 5000; // back from a lost connection and still no answer: reload (see watchConnection)
const MAX_SEND = 200;
const DIRECT_TIMEOUT_MS = 20000; // a channel request not answered by then: the page path takes over
const MAX_REFUSALS = 3;     // passes refused in one page load before the channel is left for it
// The labels/hour figure (issue 37 item 10: "10372 labeled/hour" after a 2-second burst said
// nothing). It is the pace over the last RATE_WINDOW_MS (or since the session's first label, if
// that is later), shown only once that stretch is at least RATE_MIN_SPAN_MS long and holds at
// least RATE_MIN_LABELS labels: before that there is no figure at all. See labelRate.
export const RATE_WINDOW_MS = 15 * 60 * 1000;
export const RATE_MIN_SPAN_MS = 2 * 60 * 1000;
export const RATE_MIN_LABELS = 10;
// Labels waiting this long for an answer while the browser is online and the page connected:
// the status says the server has not answered (a busy or stuck server), not just "pending".
export const NO_ANSWER_MS = 8000;
const BUILTIN_KEYS = [
  ["Backspace / z", "undo your last label"],
  ["\u2190 / \u2192", "back / forward through your labels of this session"],
  ["?", "show or hide this list"],
  ["Esc", "leave the note field (keys work again)"],
];

// The labeling pace: `times` are when each label counted was made (ms, the clock's), `now` the
// clock's reading. Returns null while there is no meaningful window (fewer than RATE_MIN_LABELS
// labels, or less than RATE_MIN_SPAN_MS of work), else {perHour, minutes, labels}: labels made in
// the window over its length. A window that starts at the session's first label counts the
// intervals after it (n - 1 labels over the time since it), so a burst is not a pace.
export function labelRate(times, now) {
  const valid = (Array.isArray(times) ? times : []).filter((t) => typeof t === "number" && t <= now);
  if (!valid.length) return null;
  const first = valid.reduce((a, b) => (b < a ? b : a));
  const since = now - RATE_WINDOW_MS;
  const from = Math.max(first, since);
  const span = now - from;
  const inWindow = valid.filter((t) => (from === first ? t >= first : t > since)).length;
  const counted = from === first ? inWindow - 1 : inWindow;
  if (inWindow < RATE_MIN_LABELS || span < RATE_MIN_SPAN_MS) return null;
  return { perHour: Math.round(counted * 3600000 / span), minutes: Math.round(span / 60000), labels: inWindow };
}

// Why labels are still pending, if anything is wrong: "offline" (the browser says it has no
// network), "unreachable" (the page lost its connection to the server), "no-answer" (labels
// have waited NO_ANSWER_MS with no answer), else null (they are on their way).
export function pendingTrouble({ pending, online, connected, waitingMs }) {
  if (!pending) return null;
  if (online === false) return "offline";
  if (connected === false) return "unreachable";
  if (typeof waitingMs === "number" && waitingMs >= NO_ANSWER_MS) return "no-answer";
  return null;
}

// What "pending N" means when something is wrong, in one sentence (issue 37 item 10: offline, the
// status said only "pending 5"). `stored`: the outbox is in the browser's storage (it survives
// closing the tab), else only in this tab's memory. "" when there is nothing to say.
export function pendingNotice({ pending, trouble, waitingMs, stored }) {
  if (!pending || !trouble) return "";
  const what = pending === 1 ? "1 label is not saved yet" : `${pending} labels are not saved yet`;
  const why = trouble === "offline" ? "this browser is offline, so the server cannot be reached"
    : trouble === "unreachable" ? "the server cannot be reached (the page lost its connection)"
      : `the server has not answered for ${Math.round((waitingMs || 0) / 1000)} s`;
  const [They, they, them] = pending === 1 ? ["It is", "it is", "it"] : ["They are", "they are", "them"];
  const kept = stored
    ? `${They} kept in this browser and sent as soon as the server answers; if you close this tab, ${they} sent `
      + "the next time you open this page in this browser."
    : `${They} kept in this tab only (this browser does not let the page store ${them}) and sent as soon as the `
      + "server answers: do not close this tab until then.";
  return `${what}: ${why}. ${kept}`;
}

function setText(node, text) {  // only when it changes: the status is an aria-live region
  if (node.textContent !== text) node.textContent = text;
}

function el(tag, cls, text) {
  const e = document.createElement(tag);
  if (cls) e.className = cls;
  if (text !== undefined && text !== null) e.textContent = String(text);
  return e;
}

function newId() {
  if (window.crypto && window.crypto.randomUUID) return window.crypto.randomUUID().replace(/-/g, "");
  return Date.now().toString(36) + Math.random().toString(36).slice(2) + Math.random().toString(36).slice(2);
}

// Inputs whose keys are not text: a radio, checkbox or button keeps focus after a click (a mode
// radio above the surface, issue 29 H3), and a grade key pressed then is meant for the surface.
const NOT_TEXT = new Set(["radio", "checkbox", "button", "submit", "reset", "range", "color", "file", "image"]);

// Only real text entry swallows the surface's keys: text inputs, textareas, selects,
// contenteditable. Focus on a radio, checkbox or button does not.
function isTyping(event) {
  const t = (event.composedPath && event.composedPath()[0]) || event.target;
  if (!t || !t.tagName) return false;
  const tag = t.tagName.toLowerCase();
  if (tag === "input") return !NOT_TEXT.has((t.type || "text").toLowerCase());
  return tag === "textarea" || tag === "select" || t.isContentEditable;
}

function tabId() {
  return newId();  // a new id per page load: a refreshed or closed tab's outbox is adopted
}

class Surface {
  constructor(root) {
    this.root = root;
    this.actor = null;
    this.surface = null;
    this.setTrigger = null;
    this.outbox = [];          // labels not yet acknowledged, in the order they were made
    this.doneHere = new Set(); // item uids labeled in this tab (not undone)
    this.elsewhere = new Set(); // item uids labeled in another tab of this browser (not undone there)
    this.channel = null;       // BroadcastChannel to this person's other tabs on the same surface
    this.queue = [];           // cards waiting, from the server, minus doneHere
    this.current = null;       // the card on screen
    this.history = [];         // {card, label, status} of this session, oldest first
    this.browse = null;        // index into history while looking back, else null
    this.saved = 0;          // labels acknowledged as saved in this page, its own and adopted ones (data-saved)
    this.savedHere = 0;      // ... of them made in this tab: the status line's "Saved"
    this.mine = new Set();   // ids of the labels made in this tab (an adopted outbox's are not)
    this.refused = 0;
    this.clock = () => Date.now();  // the rate's clock (a test may set its own)
    this.waitingSince = null; // the outbox has waited for an answer since (null: nothing waits)
    this.stored = true;       // the outbox reaches the browser's storage (false: this tab's memory only)
    this.message = "";
    this.lastSend = 0;
    this.inflight = false; // a send Python has not answered yet: the next waits for it
    this.seq = 0;
    this.keys = [];
    this.progress = null;
    this.low = 0;          // ask for more items below this many waiting (0: never ask)
    this.lastWant = 0;
    this.unused = 0;       // keys pressed while nothing was on screen
    this.noun = "items";
    this.tab = tabId();
    this.lastBeat = 0;
    this.direct = null;       // {url, pass, scope} of the direct channel, when the page gives one
    this.directOff = false;   // the channel failed (unreachable, or its pass refused): use the page path
    this.refusedPass = null;  // a pass the channel refused: a new one from the page may try again
    this.directFed = false;   // the channel has given this queue items (the page's copy is older)
    this.directRefusals = 0;  // passes the channel refused in this page load
    this.build();
    this.onKey = (e) => this.key(e);
    document.addEventListener("keydown", this.onKey, true);
    // pending labels: warn before the tab goes, and leave the outbox marked for adoption
    this.wasDown = false;  // the connection was lost since the server last answered
    this.upSince = 0;
    this.reloading = false;
    this.onBeforeUnload = (e) => {
      if (!this.outbox.length || this.reloading) return undefined;
      e.preventDefault();
      e.returnValue = "";
      return "";
    };
    this.onPageHide = () => this.persist(true);
    window.addEventListener("beforeunload", this.onBeforeUnload);
    window.addEventListener("pagehide", this.onPageHide);
    this.timer = window.setInterval(() => this.tick(), 500);
  }

  destroy() {
    document.removeEventListener("keydown", this.onKey, true);
    window.removeEventListener("beforeunload", this.onBeforeUnload);
    window.removeEventListener("pagehide", this.onPageHide);
    window.clearInterval(this.timer);
    if (this.channel) this.channel.close();
  }

  tick() {
    if (this.actor === null) return;
    if (this.outbox.length && Date.now() - this.lastBeat >= HEARTBEAT_MS) this.persist();
    if (this.adopt()) this.paint();
    this.resendIfDue();
    this.watchConnection();
    this.paintStatus();  // the pace and the connection notice change with time alone
  }

  // A server that restarted does not know this page's fragment: Streamlit drops the sends
  // (each would rerun the fragment) unless the reconnect happened to rerun the whole page.
  // So when the connection came back (Streamlit's status widget stops saying "Connecting")
  // and the server still has not answered after RELOAD_AFTER_MS, the page reloads: the
  // outbox is in localStorage, and the reloaded page adopts and sends it.
  watchConnection() {
    const w = document.querySelector('[data-testid="stStatusWidget"]');
    const down = !!(w && /connect/i.test(w.textContent || ""));
    this.serverDown = down;
    if (down) { this.wasDown = true; this.upSince = 0; return; }
    if (!this.wasDown || this.reloading) return;
    if (!this.upSince) this.upSince = Date.now();
    if ((this.outbox.length || this.wantsMore()) && Date.now() - this.upSince > RELOAD_AFTER_MS) {
      this.reloading = true;
      this.persist(true);
      window.location.reload();
    }
  }

  // ---- other tabs: an item labeled in one tab leaves the others' queues ----
  // A tab's queue is what the server sent at its last answer, so a second tab (opened earlier,
  // or left aside) would offer items the person has labeled since in the first. The tabs tell
  // each other what they label. Only items waiting in the queue are dropped: the item on
  // screen is never swapped under the person's finger (a key then would label an item they
  // did not see); it says instead that it was labeled in another tab, and a key labels it again.
  listen() {
    if (this.channel) this.channel.close();
    this.channel = null;
    if (!window.BroadcastChannel) return;
    this.channel = new BroadcastChannel(`golden-labels:${this.surface}:${this.actor}`);
    this.channel.onmessage = (ev) => this.fromOtherTab(ev.data);
  }
  tell(type, uid) {
    if (this.channel) this.channel.postMessage({ type, uid });
  }
  fromOtherTab(msg) {
    if (!msg || typeof msg.uid !== "string") return;
    if (msg.type === "undone") {
      this.elsewhere.delete(msg.uid);
      this.paint();
      return;
    }
    if (msg.type !== "labeled") return;
    this.elsewhere.add(msg.uid);
    this.queue = this.queue.filter((c) => c.uid !== msg.uid);
    this.paint();
  }

  // ---- storage: the unacknowledged labels survive a refresh and closing the tab ----
  // Each page keeps its outbox in localStorage under a key of its own (person, surface, page
  // load), with the time it last said it was alive. A page that goes away marks its outbox
  // closed (pagehide); one that dies without a word stops refreshing it. Any page of the same
  // person on the same surface (the next visit, a refresh, another tab) adopts such an outbox
  // and sends its labels: the server writes each label id once, so a label adopted twice
  // (two tabs at once) is still written once.
  prefix() {
    return `golden-outbox:${this.surface}:${this.actor}:`;
  }
  persist(closing = false) {
    const key = this.prefix() + this.tab;
    this.lastBeat = Date.now();
    if (this.outbox.length && this.waitingSince === null) this.waitingSince = Date.now();
    if (!this.outbox.length) this.waitingSince = null;
    try {
      if (!this.outbox.length) window.localStorage.removeItem(key);
      else window.localStorage.setItem(key, JSON.stringify({ at: closing ? 0 : Date.now(), labels: this.outbox }));
      this.stored = true;
    } catch (e) { this.stored = false; /* storage full or disabled: labels still live in memory */ }
  }
  take(labels) {
    const have = new Set(this.outbox.map((l) => l.id));
    let n = 0;
    for (const l of Array.isArray(labels) ? labels : []) {
      if (!l || l.by !== this.actor || typeof l.id !== "string" || have.has(l.id)) continue;
      this.outbox.push(l);
      have.add(l.id);
      if (l.action !== "undo" && typeof l.uid === "string") this.doneHere.add(l.uid);
      n += 1;
    }
    return n;
  }
  adopt() {
    let n = 0;
    try {
      const prefix = this.prefix();
      const mine = prefix + this.tab;
      const keys = [];
      for (let i = 0; i < window.localStorage.length; i++) {
        const k = window.localStorage.key(i);
        if (k && k.startsWith(prefix) && k !== mine) keys.push(k);
      }
      for (const k of keys) {
        let entry = null;
        try { entry = JSON.parse(window.localStorage.getItem(k) || "null"); } catch (e) { entry = null; }
        if (entry && typeof entry.at === "number" && entry.at !== 0 && Date.now() - entry.at < ORPHAN_MS) continue;
        window.localStorage.removeItem(k);
        n += this.take(entry && entry.labels);
      }
      // this tab's outbox from before the outbox moved to localStorage (sessionStorage)
      const old = `golden-labels:${this.surface}:${this.actor}`;
      const raw = window.sessionStorage.getItem(old);
      if (raw !== null) {
        window.sessionStorage.removeItem(old);
        n += this.take(JSON.parse(raw));
      }
    } catch (e) { /* storage disabled: nothing to adopt */ }
    if (n) this.persist();
    return n > 0;
  }
  restore() {
    this.outbox = [];
    this.adopt();
  }

  // ---- data from Python ----
  update(data) {
    this.root.dataset.updates = String(Number(this.root.dataset.updates || 0) + 1);  // page runs seen (tests)
    if (!this.usingDirect()) this.inflight = false;  // a channel request in flight answers for itself
    this.wasDown = false;  // the server answers: whatever happened to the connection is over
    this.upSince = 0;
    if (this.actor !== data.actor || this.surface !== data.surface) {
      if (this.actor !== null) this.persist(true);  // the previous person's labels wait for them
      this.actor = data.actor;
      this.surface = data.surface;
      this.restore();
      this.listen();
      this.directFed = false;  // another person's queue is never kept
    }
    const scopeBefore = this.direct ? this.direct.scope : null;
    this.takeDirect(data.direct);
    const sameScope = !!this.direct && this.direct.scope === scopeBefore;
    // once the channel has fed the queue, it owns the queue, progress and the queue's end: the
    // page's copies are from its own last run (a rerun for another reason, e.g. a click elsewhere)
    const channelOwns = this.directFed && sameScope && this.usingDirect();
    this.keys = data.keys || [];
    this.noteSpec = data.note || { label: "Note (optional)", required: false };
    this.note.placeholder = `${this.noteSpec.label} \u2014 Esc leaves the field`;
    this.note.setAttribute("aria-label", this.noteSpec.label);
    this.buildFields(data.fields || []);
    this.noun = data.noun || "items";
    this.emptyText = data.empty || "Nothing left in your queue.";
    for (const ack of data.acks || []) this.acknowledge(ack);
    if (!channelOwns) {
      this.directFed = false;
      this.progress = data.progress || null;
      this.low = typeof data.low === "number" ? data.low : 0;
      this.exhausted = !!data.exhausted;
      this.takeItems(data.items || []);
    }
    if (!this.current && this.browse === null) this.current = this.queue.shift() || null;
    this.paint();
    this.send();
  }

  takeItems(items) {
    const pendingUids = new Set(this.outbox.filter((l) => l.action !== "undo").map((l) => l.uid));
    this.queue = items.filter((c) => !this.doneHere.has(c.uid) && !pendingUids.has(c.uid)
      && !this.elsewhere.has(c.uid) && !(this.current && this.current.uid === c.uid));
  }

  takeDirect(direct) {
    if (!direct || typeof direct.pass !== "string" || typeof direct.port !== "number") {
      this.direct = null;
      return;
    }
    // GOLDEN_SURFACE_URL (a proxy's route to the API) when set, else the app's host at the API's port
    const url = typeof direct.base === "string" && direct.base
      ? new URL(direct.base.replace(/\/+$/, "") + "/surface/v1/batch", window.location.href).href
      : `${window.location.protocol}//${window.location.hostname}:${direct.port}/surface/v1/batch`;
    this.direct = { url, pass: direct.pass, scope: String(direct.scope || "") };
    if (this.refusedPass !== null && this.refusedPass !== direct.pass) {
      this.refusedPass = null;  // a new pass: the channel may take it
    }
  }

  usingDirect() {
    return !!this.direct && !this.directOff && this.refusedPass === null;
  }

  // The channel's answer: like the page's data, for this surface's queue only.
  fromDirect(answer) {
    this.inflight = false;
    for (const ack of answer.acks || []) this.acknowledge(ack);
    if (answer.progress) this.progress = answer.progress;
    if (typeof answer.low === "number") this.low = answer.low;
    this.exhausted = !!answer.exhausted;
    if (Array.isArray(answer.items)) {
      this.takeItems(answer.items);
      this.directFed = true;
    }
    if (!this.current && this.browse === null) this.current = this.queue.shift() || null;
    this.paint();
    if (this.outbox.length) this.send();  // labels made while this batch was on its way
  }

  directFailed(refused) {
    this.inflight = false;
    this.directRefusals += refused ? 1 : 0;
    if (refused && this.directRefusals < MAX_REFUSALS) this.refusedPass = this.direct ? this.direct.pass : "";
    else this.directOff = true;  // unreachable, or refusing every new pass: the page path for this page load
    this.lastSend = 0;
    this.paintStatus();
    this.send();
  }

  postDirect(batch) {
    const ctrl = window.AbortController ? new AbortController() : null;
    const timer = ctrl ? window.setTimeout(() => ctrl.abort(), DIRECT_TIMEOUT_MS) : null;
    // text/plain: a CORS simple request, no preflight round trip per batch
    window.fetch(this.direct.url, {
      method: "POST", headers: { "Content-Type": "text/plain;charset=UTF-8" }, cache: "no-store",
      body: JSON.stringify({ pass: this.direct.pass, ...batch }), signal: ctrl ? ctrl.signal : undefined,
    }).then((r) => {
      if (timer) window.clearTimeout(timer);
      if (r.status === 401) return this.directFailed(true);
      if (!r.ok) return this.directFailed(false);
      return r.json().then((answer) => this.fromDirect(answer));
    }).catch(() => {
      if (timer) window.clearTimeout(timer);
      this.directFailed(false);
    });
  }

  acknowledge(ack) {
    const i = this.outbox.findIndex((l) => l.id === ack.label_id);
    if (i < 0) return;
    if (ack.status === "held") {
      this.message = ack.message;
      this.waitingSince = Date.now();  // the server answered (it holds the label): not a connection problem
      return;
    }
    const label = this.outbox[i];
    this.outbox.splice(i, 1);
    this.waitingSince = this.outbox.length ? Date.now() : null;  // an answer came: the rest waits from now
    this.persist();
    const h = this.history.find((x) => x.label.id === ack.label_id);
    if (ack.status === "refused") {
      this.refused += 1;
      this.message = ack.message;
      if (h) h.status = "refused";
      if (label.action !== "undo") this.doneHere.delete(label.uid);
    } else {
      this.saved += 1;
      if (this.mine.has(label.id)) this.savedHere += 1;  // an adopted label is another tab's or visit's
      if (h && h.status !== "undone") h.status = "saved";  // an undo pressed before this ack stands
    }
  }

  // ---- sending ----
  // One send at a time: a send starts a script run on the server, and a new send while it
  // runs would interrupt it (its acknowledgements would wait for a quiet moment). Labels
  // made meanwhile go with the next send, as soon as the answer arrives; a send that gets
  // no answer within RESEND_MS (lost, server restarting) is repeated with everything pending.
  // A send also says how many items wait here (`left`); with no labels it is a request for
  // more items (the queue fell below `low`), at most one per WANT_MS.
  // Through the channel, a send waits for its answer (or its failure) however long: a busy
  // server answers late, and a repeat would only add to its work.
  send() {
    const direct = this.usingDirect();
    if (!direct && !this.setTrigger) return;
    if (!this.outbox.length) {
      if (!this.wantsMore() || Date.now() - this.lastWant < WANT_MS) return;
      this.lastWant = Date.now();
    }
    if (this.inflight && (direct || Date.now() - this.lastSend < RESEND_MS)) return;
    this.inflight = true;
    this.lastSend = Date.now();
    this.seq += 1;
    const batch = { seq: this.seq, labels: this.outbox.slice(0, MAX_SEND), left: this.queue.length };
    if (direct) this.postDirect(batch);
    else this.setTrigger("send", batch);
  }
  wantsMore() {
    return this.low > 0 && !this.exhausted && this.queue.length < this.low;
  }
  resendIfDue() {
    if (!this.outbox.length) {
      if (this.wantsMore()) this.send();
      return;
    }
    this.send();
    this.paintStatus();
  }

  // ---- keys ----
  key(e) {
    if (!this.root.isConnected) return;
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    if (isTyping(e)) {
      if (e.key === "Escape") {
        const t = e.composedPath()[0];
        if (t && t.blur) t.blur();
        e.preventDefault();
      }
      return;
    }
    if (this.overlay.hidden === false && (e.key === "Escape" || e.key === "?")) {
      this.overlay.hidden = true;
      e.preventDefault();
      return;
    }
    if (e.key === "?") { this.overlay.hidden = false; e.preventDefault(); return; }
    if (e.key === "Backspace" || e.key === "z") { this.undo(); e.preventDefault(); return; }
    if (e.key === "ArrowLeft") { this.back(); e.preventDefault(); return; }
    if (e.key === "ArrowRight") { this.forward(); e.preventDefault(); return; }
    const k = this.keys.find((x) => x.key === e.key);
    if (!k) return;
    e.preventDefault();
    e.stopPropagation();
    this.label(k);
  }

  shown() {
    return this.browse !== null ? this.history[this.browse].card : this.current;
  }

  label(k) {
    const card = this.shown();
    if (!card) {  // never applied to an item the person has not seen: said, counted, not lost silently
      this.unused += 1;
      this.message = this.state() === "loading"
        ? `Key ${k.key} not used: the next ${this.noun} are loading.`
        : `Key ${k.key} not used: nothing is left to label.`;
      this.paintStatus();
      this.send();
      return;
    }
    if (this.noteSpec.required && !this.note.value.trim()) {
      this.message = `Not labeled: write the ${this.noteSpec.label.toLowerCase().replace(/ \(required\)$/, "")} `
        + "first, then Esc and the key.";
      this.paintStatus();
      this.note.focus();
      return;
    }
    const fields = {};
    for (const [name, input] of this.fieldInputs) {
      if (input.value.trim()) fields[name] = input.value;
      input.value = "";
    }
    const label = {
      id: newId(), by: this.actor, uid: card.uid, item: card.item, digest: card.digest,
      action: k.action, value: k.value, note: this.note.value || "", fields,
    };
    this.note.value = "";
    this.message = "";  // a new label: the last action's status line no longer applies
    this.mine.add(label.id);
    this.outbox.push(label);
    this.persist();
    this.tell("labeled", card.uid);
    this.elsewhere.delete(card.uid);  // labeled here now
    const at = this.clock();
    if (this.browse !== null) {
      this.history[this.browse] = { card, label, status: "pending", at };
      this.browse = null;
    } else {
      this.history.push({ card, label, status: "pending", at });
      this.doneHere.add(card.uid);
      this.current = this.queue.shift() || null;
    }
    this.paint();
    this.send();
  }

  undo() {
    for (let i = this.history.length - 1; i >= 0; i--) {
      const h = this.history[i];
      if (h.status === "refused" || h.status === "undone") continue;
      const label = { id: newId(), by: this.actor, uid: h.card.uid, item: h.card.item, digest: h.card.digest,
        action: "undo", target: h.label.id, note: "" };
      h.status = "undone";
      this.mine.add(label.id);
      this.doneHere.delete(h.card.uid);
      this.tell("undone", h.card.uid);
      this.outbox.push(label);
      this.persist();
      if (this.current) this.queue.unshift(this.current);
      this.current = h.card;
      this.browse = null;
      this.message = `Undone: ${this.describe(h.label)} on the item shown again.`;
      this.paint();
      this.send();
      return;
    }
    this.message = "Nothing to undo in this session.";
    this.paintStatus();
  }

  back() {
    if (!this.history.length) return;
    this.message = "";
    this.browse = this.browse === null ? this.history.length - 1 : Math.max(0, this.browse - 1);
    this.paint();
  }
  forward() {
    if (this.browse === null) return;
    this.message = "";
    this.browse = this.browse + 1 >= this.history.length ? null : this.browse + 1;
    this.paint();
  }

  describe(label) {
    const k = this.keys.find((x) => x.action === label.action && x.value === label.value);
    return k ? k.label : label.action;
  }

  // ---- painting ----
  build() {
    const r = this.root;
    this.head = el("div", "gs-head");
    this.title = el("div", "gs-title");
    this.meta = el("div", "gs-meta");
    this.banner = el("div", "gs-banner");
    this.body = el("div", "gs-body");
    this.noteRow = el("div", "gs-note");
    this.note = el("input");
    this.note.type = "text";
    this.note.placeholder = "Note (optional) \u2014 Esc leaves the field";
    this.note.setAttribute("aria-label", "Note");
    this.noteRow.appendChild(this.note);
    this.fieldInputs = new Map();
    this.fieldsKey = "";
    this.legend = el("div", "gs-legend");
    this.status = el("div", "gs-status");
    this.status.setAttribute("role", "status");
    this.status.setAttribute("aria-live", "polite");
    this.notice = el("div", "gs-notice gs-warn");  // what pending labels wait for, when something is wrong
    this.notice.hidden = true;
    this.counter = el("div", "gs-counter");
    this.counter.title = `labeled/hour: your pace over the last ${RATE_WINDOW_MS / 60000} minutes, shown once `
      + `${RATE_MIN_LABELS} labels span ${RATE_MIN_SPAN_MS / 60000} minutes or more (skips and undone labels `
      + "do not count)";
    this.overlay = el("div", "gs-overlay");
    this.overlay.hidden = true;
    this.head.append(this.title, this.meta);
    r.append(this.head, this.banner, this.body, this.noteRow, this.legend, this.status, this.notice, this.counter,
      this.overlay);
  }

  buildFields(specs) {
    const key = JSON.stringify(specs);
    if (key === this.fieldsKey) return;
    this.fieldsKey = key;
    for (const input of this.fieldInputs.values()) input.remove();
    this.fieldInputs = new Map();
    for (const f of specs) {
      const input = el("input");
      input.type = "text";
      input.placeholder = `${f.label} \u2014 Esc leaves the field`;
      input.setAttribute("aria-label", f.label);
      this.noteRow.appendChild(input);
      this.fieldInputs.set(f.name, input);
    }
  }

  // labeling (an item on screen), browsing (looking back), loading (queue empty, more to
  // come), empty (nothing left)
  state() {
    if (this.browse !== null) return "browsing";
    if (this.current) return "labeling";
    return this.outbox.length || !this.exhausted ? "loading" : "empty";
  }

  paint() {
    const card = this.shown();
    this.root.dataset.uid = card ? card.uid : "";
    this.root.dataset.pending = String(this.outbox.length);
    this.root.dataset.state = this.state();
    this.root.dataset.queue = String(this.queue.length);
    this.root.dataset.channel = this.usingDirect() ? "direct" : "page";
    this.body.replaceChildren();
    if (!card) {
      const waiting = this.state() === "loading";
      this.title.textContent = waiting ? `Loading the next ${this.noun}\u2026` : this.emptyText;
      this.meta.textContent = "";
      this.banner.hidden = true;
    } else {
      this.title.textContent = card.title;
      this.meta.textContent = card.meta;
      if (this.browse !== null) {
        const h = this.history[this.browse];
        this.banner.hidden = false;
        this.banner.textContent = `Looking back (${this.browse + 1} of ${this.history.length}): you said `
          + `${h.status === "undone" ? "(undone) " : ""}${this.describe(h.label)}. A key changes it; \u2192 returns.`;
      } else if (this.elsewhere.has(card.uid)) {
        this.banner.hidden = false;
        this.banner.textContent = "You labeled this item in another tab just now. A key here labels it "
          + "again (your later label counts).";
      } else if (card.notice) {  // e.g. a new answer starts (nugget assignment)
        this.banner.hidden = false;
        this.banner.textContent = card.notice;
      } else {
        this.banner.hidden = true;
      }
      let firstHit = null;
      for (const block of card.blocks) {
        const box = el("div", "gs-block");
        if (block.heading) box.appendChild(el("div", "gs-block-head", block.heading));
        const text = el("div", block.mono ? "gs-text gs-mono" : "gs-text");
        for (const [piece, kind] of block.segments) {
          const span = el("span", kind === "plain" ? null : `gs-${kind}`, piece);
          if (kind === "evidence" && !firstHit) firstHit = span;
          text.appendChild(span);
        }
        box.appendChild(text);
        this.body.appendChild(box);
      }
      if (firstHit) {
        const box = firstHit.parentElement;
        box.scrollTop = Math.max(0, firstHit.offsetTop - box.offsetTop - 24);
      }
    }
    this.noteRow.hidden = !card;  // nothing to label: no note field, no key buttons
    this.legend.hidden = !card;
    this.paintLegend();
    this.paintStatus();
    this.paintOverlay();
  }

  paintLegend() {
    this.legend.replaceChildren();
    for (const k of this.keys) {
      const b = el("button", "gs-key");
      b.type = "button";
      b.append(el("kbd", null, k.key), document.createTextNode(" " + k.label));
      b.title = `Key ${k.key}`;
      b.onclick = () => this.label(k);
      this.legend.appendChild(b);
    }
    const help = el("button", "gs-key gs-help");
    help.type = "button";
    help.append(el("kbd", null, "?"), document.createTextNode(" keys"));
    help.onclick = () => { this.overlay.hidden = !this.overlay.hidden; };
    this.legend.appendChild(help);
  }

  paintStatus() {
    const pending = this.outbox.length;
    this.root.dataset.pending = String(pending);
    this.root.dataset.saved = String(this.saved);
    this.root.dataset.savedHere = String(this.savedHere);
    this.root.dataset.refused = String(this.refused);
    this.root.dataset.unused = String(this.unused);
    // "Saved" is this tab's own labels; labels it sent for another tab or an earlier visit (an
    // adopted outbox: they share the browser's storage) are counted apart (issue 37 item 10)
    const others = this.saved - this.savedHere;
    const parts = [`Saved ${this.savedHere}`, `pending ${pending}`, `refused ${this.refused}`];
    if (others > 0) parts.push(`${others} more saved from another tab or an earlier visit`);
    setText(this.status, parts.join(" \u00b7 ") + (this.message ? ` \u2014 ${this.message}` : ""));
    this.status.className = "gs-status" + (this.message && this.message.startsWith("Not ") ? " gs-warn" : "");
    const now = Date.now();
    const waitingMs = this.waitingSince === null ? 0 : now - this.waitingSince;
    const trouble = pendingTrouble({ pending, online: window.navigator.onLine, connected: !this.serverDown,
      waitingMs });
    this.root.dataset.connection = trouble || "ok";
    const notice = pendingNotice({ pending, trouble, waitingMs, stored: this.stored });
    setText(this.notice, notice);
    this.notice.hidden = !notice;
    const kept = this.history.filter((h) => h.status !== "undone" && h.status !== "refused");
    const skipped = kept.filter((h) => h.label.action === "skip").length;
    const counted = kept.filter((h) => h.label.action !== "skip");  // a skip labels nothing (issue 29 L5)
    const n = counted.length;
    const rate = labelRate(counted.map((h) => h.at), this.clock());
    this.root.dataset.rate = rate ? String(rate.perHour) : "";
    let left = "";
    if (this.progress && typeof this.progress.total === "number") {
      const remaining = Math.max(0, this.progress.total - this.progress.done - pending);
      left = ` \u00b7 ${remaining} left of ${this.progress.total}`;
    }
    setText(this.counter, `This session: ${n} labeled` + (skipped ? ` \u00b7 ${skipped} skipped` : "")
      + (rate ? ` \u00b7 ${rate.perHour} labeled/hour over the last ${rate.minutes} min` : "") + left);
  }

  paintOverlay() {
    this.overlay.replaceChildren();
    this.overlay.appendChild(el("div", "gs-overlay-title", "Keys"));
    const table = el("table");
    for (const [k, what] of this.keys.map((x) => [x.key, x.label]).concat(BUILTIN_KEYS)) {
      const tr = el("tr");
      const a = el("td");
      a.appendChild(el("kbd", null, k));
      tr.append(a, el("td", null, what));
      table.appendChild(tr);
    }
    this.overlay.appendChild(table);
    this.overlay.appendChild(el("div", "gs-overlay-foot", "Press ? or Esc to close."));
  }
}

export default function (component) {
  const { data, setTriggerValue, parentElement } = component;
  let root = parentElement.querySelector(".gs-root");
  if (!root) {
    root = el("div", "gs-root");
    parentElement.appendChild(root);
  }
  if (!root.__surface) root.__surface = new Surface(root);
  const s = root.__surface;
  s.setTrigger = setTriggerValue;
  s.update(data || {});
  return () => {
    s.destroy();
    root.__surface = null;
  };
}
