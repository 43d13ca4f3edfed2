// The client-side labeling surface (Judge, Transcripts review): a prefetched queue of items
// painted at once on a key, labels sent to Python with an id of their own and a digest of what
// was shown, re-sent until acknowledged (they survive a reconnect, a server restart and a
// refresh of the tab), undo, browsing back through one's own labels, a key overlay.
//
// Every piece of item text is set with textContent: corpus text is untrusted and never HTML.

const RESEND_MS = 1500;
const MAX_SEND = 200;
const BUILTIN_KEYS = [
  ["Backspace / z", "undo your last label"],
  ["\u2190 / \u2192", "back / forward through your labels of this session"],
  ["?", "show or hide this list"],
  ["Esc", "leave the note field (keys work again)"],
];

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

function isTyping(event) {
  const t = (event.composedPath && event.composedPath()[0]) || event.target;
  if (!t || !t.tagName) return false;
  const tag = t.tagName.toLowerCase();
  return tag === "input" || tag === "textarea" || tag === "select" || t.isContentEditable;
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
    this.saved = 0;
    this.refused = 0;
    this.message = "";
    this.started = null;
    this.lastSend = 0;
    this.inflight = false; // a send Python has not answered yet: the next waits for it
    this.seq = 0;
    this.keys = [];
    this.progress = null;
    this.build();
    this.onKey = (e) => this.key(e);
    document.addEventListener("keydown", this.onKey, true);
    this.timer = window.setInterval(() => this.resendIfDue(), 500);
  }

  destroy() {
    document.removeEventListener("keydown", this.onKey, true);
    window.clearInterval(this.timer);
    if (this.channel) this.channel.close();
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

  // ---- storage: the unacknowledged labels of this tab survive a refresh ----
  storageKey() {
    return `golden-labels:${this.surface}:${this.actor}`;
  }
  persist() {
    try {
      window.sessionStorage.setItem(this.storageKey(), JSON.stringify(this.outbox));
    } catch (e) { /* storage full or disabled: labels still live in memory */ }
  }
  restore() {
    try {
      const raw = window.sessionStorage.getItem(this.storageKey());
      const list = raw ? JSON.parse(raw) : [];
      if (Array.isArray(list)) this.outbox = list.filter((l) => l && l.by === this.actor);
    } catch (e) { this.outbox = []; }
    for (const l of this.outbox) if (l.action !== "undo") this.doneHere.add(l.uid);
  }

  // ---- data from Python ----
  update(data) {
    this.inflight = false;
    if (this.actor !== data.actor || this.surface !== data.surface) {
      this.actor = data.actor;
      this.surface = data.surface;
      this.restore();
      this.listen();
    }
    this.keys = data.keys || [];
    this.noteSpec = data.note || { label: "Note (optional)", required: false };
    this.note.placeholder = `${this.noteSpec.label} \u2014 Esc leaves the field`;
    this.note.setAttribute("aria-label", this.noteSpec.label);
    this.buildFields(data.fields || []);
    this.progress = data.progress || null;
    this.emptyText = data.empty || "Nothing left in your queue.";
    this.exhausted = !!data.exhausted;
    for (const ack of data.acks || []) this.acknowledge(ack);
    const pendingUids = new Set(this.outbox.filter((l) => l.action !== "undo").map((l) => l.uid));
    this.queue = (data.items || []).filter((c) => !this.doneHere.has(c.uid) && !pendingUids.has(c.uid)
      && !this.elsewhere.has(c.uid) && !(this.current && this.current.uid === c.uid));
    if (!this.current && this.browse === null) this.current = this.queue.shift() || null;
    this.paint();
    if (this.outbox.length) this.send();
  }

  acknowledge(ack) {
    const i = this.outbox.findIndex((l) => l.id === ack.label_id);
    if (i < 0) return;
    if (ack.status === "held") {
      this.message = ack.message;
      return;
    }
    const label = this.outbox[i];
    this.outbox.splice(i, 1);
    this.persist();
    const h = this.history.find((x) => x.label.id === ack.label_id);
    if (ack.status === "refused") {
      this.refused += 1;
      this.message = ack.message;
      if (h) h.status = "refused";
      if (label.action !== "undo") this.doneHere.delete(label.uid);
    } else {
      this.saved += 1;
      if (h) h.status = "saved";
    }
  }

  // ---- sending ----
  // One send at a time: a send starts a script run on the server, and a new send while it
  // runs would interrupt it (its acknowledgements would wait for a quiet moment). Labels
  // made meanwhile go with the next send, as soon as the answer arrives; a send that gets
  // no answer within RESEND_MS (lost, server restarting) is repeated with everything pending.
  send() {
    if (!this.setTrigger || !this.outbox.length) return;
    if (this.inflight && Date.now() - this.lastSend < RESEND_MS) return;
    this.inflight = true;
    this.lastSend = Date.now();
    this.seq += 1;
    this.setTrigger("send", { seq: this.seq, labels: this.outbox.slice(0, MAX_SEND) });
  }
  resendIfDue() {
    if (!this.outbox.length) return;
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
    if (!card) {
      this.message = "Nothing is on screen, so that key was not used.";
      this.paintStatus();
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
    this.outbox.push(label);
    this.persist();
    this.tell("labeled", card.uid);
    this.elsewhere.delete(card.uid);  // labeled here now
    if (!this.started) this.started = Date.now();
    if (this.browse !== null) {
      this.history[this.browse] = { card, label, status: "pending" };
      this.browse = null;
    } else {
      this.history.push({ card, label, status: "pending" });
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
    this.browse = this.browse === null ? this.history.length - 1 : Math.max(0, this.browse - 1);
    this.paint();
  }
  forward() {
    if (this.browse === null) return;
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
    this.counter = el("div", "gs-counter");
    this.overlay = el("div", "gs-overlay");
    this.overlay.hidden = true;
    this.head.append(this.title, this.meta);
    r.append(this.head, this.banner, this.body, this.noteRow, this.legend, this.status, this.counter, this.overlay);
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

  paint() {
    const card = this.shown();
    this.root.dataset.uid = card ? card.uid : "";
    this.root.dataset.pending = String(this.outbox.length);
    this.body.replaceChildren();
    if (!card) {
      const waiting = this.outbox.length || !this.exhausted;
      this.title.textContent = waiting ? "Loading the next items\u2026" : this.emptyText;
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
    this.root.dataset.refused = String(this.refused);
    const parts = [`Saved ${this.saved}`, `pending ${pending}`, `refused ${this.refused}`];
    this.status.textContent = parts.join(" \u00b7 ") + (this.message ? ` \u2014 ${this.message}` : "");
    this.status.className = "gs-status" + (this.message && this.message.startsWith("Not ") ? " gs-warn" : "");
    const n = this.history.filter((h) => h.status !== "undone" && h.status !== "refused").length;
    const hours = this.started ? (Date.now() - this.started) / 3600000 : 0;
    const rate = hours > 0 && n > 1 ? Math.round(n / hours) : null;
    let left = "";
    if (this.progress && typeof this.progress.total === "number") {
      const remaining = Math.max(0, this.progress.total - this.progress.done - pending);
      left = ` \u00b7 ${remaining} left of ${this.progress.total}`;
    }
    this.counter.textContent = `This session: ${n} labeled` + (rate ? ` \u00b7 ${rate} items/hour` : "") + left;
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
