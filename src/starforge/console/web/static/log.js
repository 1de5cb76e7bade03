// A job's log drawn as a terminal would: the raw stream (carriage returns, ANSI colours, cursor movement) becomes
// lines of styled text, progress bars collapse to their last state, other escape sequences are swallowed. Text is
// only ever inserted with DOM text nodes (a log line "<b>x</b>" shows those characters). The page keeps the last
// MAX_LINES lines, redraws only the lines that changed (once per animation frame), searches what it shows, and
// links the whole raw log as a download. Terminal (the model, no DOM) is exported for tests.
"use strict";

(function () {
  const MAX_LINES = 20000;
  // SGR colours: 30–37 and 90–97 are the palette's 16 (0–15); 256-colour and true-colour map to the nearest of them
  const PALETTE = [
    [0, 0, 0], [205, 49, 49], [13, 188, 121], [229, 229, 16], [36, 114, 200], [188, 63, 188], [17, 168, 205],
    [229, 229, 229], [102, 102, 102], [241, 76, 76], [35, 209, 139], [245, 245, 67], [59, 142, 234], [214, 112, 214],
    [41, 184, 219], [255, 255, 255],
  ];

  function nearest(r, g, b) {
    let best = 0, bestDistance = Infinity;
    PALETTE.forEach(([pr, pg, pb], index) => {
      const distance = (pr - r) ** 2 + (pg - g) ** 2 + (pb - b) ** 2;
      if (distance < bestDistance) { best = index; bestDistance = distance; }
    });
    return best;
  }

  function colour256(n) {
    if (n < 16) return n;
    if (n >= 232) { const v = 8 + (n - 232) * 10; return nearest(v, v, v); }
    const c = n - 16, level = (x) => (x ? 55 + x * 40 : 0);
    return nearest(level(Math.floor(c / 36)), level(Math.floor(c / 6) % 6), level(c % 6));
  }

  // One pen: the text colour as a palette index (null: the theme's own), and attributes. Background colours are
  // ignored: the log keeps the theme's panel, so every palette colour stays readable on it.
  const PLAIN = Object.freeze({fg: null, bold: false, dim: false, italic: false, underline: false});

  function penClass(pen) {
    const names = [];
    if (pen.fg !== null) names.push("ansi-fg-" + pen.fg);
    for (const flag of ["bold", "dim", "italic", "underline"]) if (pen[flag]) names.push("ansi-" + flag);
    return names.join(" ");
  }

  function applySGR(pen, params) {
    const codes = params === "" ? [0] : params.split(/[;:]/).map((p) => (p === "" ? 0 : parseInt(p, 10)));
    let next = {...pen};
    for (let i = 0; i < codes.length; i++) {
      const code = codes[i];
      if (code === 0) next = {...PLAIN};
      else if (code === 1) next.bold = true;
      else if (code === 2) next.dim = true;
      else if (code === 3) next.italic = true;
      else if (code === 4) next.underline = true;
      else if (code === 22) { next.bold = false; next.dim = false; }
      else if (code === 23) next.italic = false;
      else if (code === 24) next.underline = false;
      else if (code >= 30 && code <= 37) next.fg = code - 30;
      else if (code >= 90 && code <= 97) next.fg = code - 90 + 8;
      else if (code === 39) next.fg = null;
      else if (code === 38 || code === 48) {  // 256-colour or true-colour: its arguments are skipped for 48
        let colour = null;
        if (codes[i + 1] === 5) { colour = colour256(codes[i + 2] || 0); i += 2; }
        else if (codes[i + 1] === 2) { colour = nearest(codes[i + 2] || 0, codes[i + 3] || 0, codes[i + 4] || 0); i += 4; }
        if (colour !== null && code === 38) next.fg = colour;
      }
      // anything else (backgrounds, blink, inverse, fonts …) is ignored
    }
    return next;
  }

  // A line: its text and, per character, the class of its pen ("" for plain; null when the whole line is plain).
  function newLine() { return {text: "", classes: null}; }

  class Terminal {
    constructor(maxLines = MAX_LINES) {
      this.maxLines = maxLines;
      this.lines = [newLine()];
      this.row = 0;
      this.col = 0;
      this.pen = {...PLAIN};
      this.penClass = "";
      this.state = "text";  // text | esc | csi | string (OSC, DCS …, until BEL or ESC \) | string-esc | esc-more
      this.params = "";
      this.dirty = new Set();
      this.dropped = 0;  // lines dropped from the top to keep maxLines
      this.shifted = 0;  // of those, the ones dropped since the page last took the changes
    }

    // Feed a piece of the stream; it may end anywhere, even inside an escape sequence.
    write(chunk) {
      let run = "";
      const flush = () => { if (run) { this.put(run); run = ""; } };
      for (let i = 0; i < chunk.length; i++) {
        const ch = chunk[i];
        const code = ch.charCodeAt(0);
        if (this.state === "text") {
          if (code >= 0x20 && code !== 0x7f && code !== 0x9b) { run += ch; continue; }
          flush();
          if (ch === "\n") this.lineFeed();
          else if (ch === "\r") this.col = 0;
          else if (ch === "\x1b") this.state = "esc";
          else if (code === 0x9b) { this.state = "csi"; this.params = ""; }
          else if (ch === "\t") this.put(" ".repeat(8 - (this.col % 8)));
          else if (ch === "\b") this.col = Math.max(0, this.col - 1);
          // other control characters (bell, NUL …) are swallowed
        } else if (this.state === "esc") {
          if (ch === "[") { this.state = "csi"; this.params = ""; }
          else if (ch === "]" || ch === "P" || ch === "X" || ch === "^" || ch === "_") this.state = "string";
          else if (code >= 0x20 && code <= 0x2f) this.state = "esc-more";  // ESC ( B and the like
          else this.state = "text";  // ESC 7, ESC 8, ESC = …: one character, swallowed
        } else if (this.state === "esc-more") {
          if (code < 0x20 || code > 0x2f) this.state = "text";
        } else if (this.state === "csi") {
          if (code >= 0x40 && code <= 0x7e) { this.state = "text"; this.csi(ch, this.params); }
          else if (ch === "\x1b") this.state = "esc";
          else if (code < 0x20) { /* a control inside a sequence: ignored */ }
          else if (this.params.length < 64) this.params += ch;
        } else if (this.state === "string") {
          if (ch === "\x07") this.state = "text";
          else if (ch === "\x1b") this.state = "string-esc";
        } else if (this.state === "string-esc") {
          this.state = ch === "\\" ? "text" : "string";
        }
      }
      flush();
    }

    csi(final, params) {
      const isPrivate = /^[?<=>]/.test(params);
      const n = Math.max(1, parseInt(params, 10) || 1);
      if (final === "m") { if (!isPrivate) { this.pen = applySGR(this.pen, params); this.penClass = penClass(this.pen); } }
      else if (isPrivate) { /* ?25l, ?2004h …: modes, swallowed */ }
      else if (final === "A" || final === "F") { this.row = Math.max(0, this.row - n); if (final === "F") this.col = 0; }
      else if (final === "B" || final === "E") { this.moveDown(n); if (final === "E") this.col = 0; }
      else if (final === "C") this.col += n;
      else if (final === "D") this.col = Math.max(0, this.col - n);
      else if (final === "G") this.col = n - 1;
      else if (final === "K") this.erase(parseInt(params, 10) || 0);
      // every other sequence (cursor position, scroll regions, erase display …) is swallowed
    }

    moveDown(n) {
      for (let k = 0; k < n; k++) {
        this.row++;
        if (this.row >= this.lines.length) { this.lines.push(newLine()); this.dirty.add(this.row); }
      }
    }

    lineFeed() {
      this.moveDown(1);
      this.col = 0;
      this.trim();
    }

    erase(mode) {
      const line = this.lines[this.row];
      if (mode === 0) {
        line.text = line.text.slice(0, this.col);
        if (line.classes) line.classes.length = Math.min(line.classes.length, this.col);
      } else if (mode === 1) {
        const width = Math.min(this.col + 1, line.text.length);
        line.text = " ".repeat(width) + line.text.slice(width);
        if (line.classes) line.classes.fill("", 0, width);
      } else {
        line.text = "";
        line.classes = null;
      }
      this.dirty.add(this.row);
    }

    put(text) {
      const line = this.lines[this.row];
      if (this.col > line.text.length) {  // the cursor moved past the end: spaces up to it
        if (line.classes) while (line.classes.length < this.col) line.classes.push("");
        line.text += " ".repeat(this.col - line.text.length);
      }
      const col = this.col;
      line.text = line.text.slice(0, col) + text + line.text.slice(col + text.length);
      if (line.classes || this.penClass) {
        if (!line.classes) line.classes = new Array(col).fill("");
        while (line.classes.length < col) line.classes.push("");
        for (let k = 0; k < text.length; k++) line.classes[col + k] = this.penClass;
      }
      this.col = col + text.length;
      this.dirty.add(this.row);
    }

    // Keep at most maxLines lines: drop from the top (in batches, so a long log is not spliced every line).
    trim() {
      const excess = this.lines.length - this.maxLines;
      if (excess < Math.max(1, Math.floor(this.maxLines / 20))) return;
      this.lines.splice(0, excess);
      this.row = Math.max(0, this.row - excess);
      this.dropped += excess;
      const moved = new Set();
      for (const index of this.dirty) if (index >= excess) moved.add(index - excess);
      this.dirty = moved;
      this.shifted += excess;
    }

    // The lines to show: trailing blank lines (where the cursor waits, or a bar's cursor movement left) are not.
    visible() {
      let count = this.lines.length;
      while (count > 0 && this.lines[count - 1].text.trim() === "") count--;
      return count;
    }

    // Take the changes since the last call: {shifted: lines dropped from the top, dirty: indexes changed}.
    changes() {
      const taken = {shifted: this.shifted, dirty: this.dirty};
      this.shifted = 0;
      this.dirty = new Set();
      return taken;
    }

    text() {
      return this.lines.slice(0, this.visible()).map((line) => line.text).join("\n");
    }

    // The line's pieces: [{text, cls}], runs of one pen.
    segments(index) {
      const line = this.lines[index];
      if (!line.classes) return [{text: line.text, cls: "", start: 0}];
      const pieces = [];
      let start = 0;
      for (let k = 1; k <= line.text.length; k++) {
        if (k === line.text.length || (line.classes[k] || "") !== (line.classes[start] || "")) {
          pieces.push({text: line.text.slice(start, k), cls: line.classes[start] || "", start});
          start = k;
        }
      }
      return pieces;
    }
  }

  // Draw one line into `element`: its styled pieces, each match of the search wrapped in <mark>.
  function drawLine(element, pieces, marks, current) {
    const nodes = [];
    for (const piece of pieces) {
      let at = 0;
      while (at < piece.text.length) {
        const absolute = piece.start + at;
        const mark = marks.find((m) => m.start <= absolute && absolute < m.end);
        const next = marks.find((m) => m.start > absolute);
        const stop = mark ? mark.end : next ? next.start : Infinity;
        const end = Math.min(piece.text.length, stop - piece.start);
        const text = piece.text.slice(at, end);
        let node = document.createTextNode(text);
        if (piece.cls) { const span = document.createElement("span"); span.className = piece.cls; span.append(node); node = span; }
        if (mark) {
          const last = nodes[nodes.length - 1];
          if (last && last.mark === mark) last.element.append(node);
          else {
            const marked = document.createElement("mark");
            if (mark === current) marked.className = "current";
            marked.append(node);
            nodes.push({mark, element: marked});
          }
        } else nodes.push({mark: null, element: node});
        at = end;
      }
    }
    element.replaceChildren(...nodes.map((n) => n.element), "\n");
  }

  function liveLog(pre) {
    const follow = document.getElementById("log-follow");
    const end = document.getElementById("log-end");
    const state = document.getElementById("log-state");
    const cut = document.getElementById("log-cut");
    const download = document.getElementById("log-download");
    const find = document.getElementById("log-find");
    const found = document.getElementById("log-found");
    const terminal = new Terminal();
    const rows = [];  // one <span> per visible line
    let query = "", matches = [], current = -1, marked = new Set(), started = null, frame = 0;

    const toEnd = () => { pre.scrollTop = pre.scrollHeight; };
    end.addEventListener("click", () => { toEnd(); follow.checked = true; pre.focus(); });
    pre.addEventListener("scroll", () => {
      const atEnd = pre.scrollHeight - pre.scrollTop - pre.clientHeight < 8;
      if (!atEnd && follow.checked) follow.checked = false;
    });

    const marksOf = (index) => matches.filter((m) => m.row === index);
    const draw = (index) => drawLine(rows[index], terminal.segments(index), marksOf(index), matches[current]);

    function search() {
      const before = marked;
      matches = [];
      marked = new Set();
      if (query) {
        const needle = query.toLowerCase();
        const count = terminal.visible();
        for (let index = 0; index < count; index++) {
          const hay = terminal.lines[index].text.toLowerCase();
          for (let at = hay.indexOf(needle); at >= 0; at = hay.indexOf(needle, at + needle.length)) {
            matches.push({row: index, start: at, end: at + needle.length});
            marked.add(index);
          }
        }
      }
      if (current >= matches.length) current = matches.length - 1;
      if (current < 0 && matches.length) current = 0;
      for (const index of new Set([...before, ...marked])) if (index < rows.length) draw(index);
      found.textContent = !query ? "" : matches.length ? `${current + 1} of ${matches.length}` : "no matches";
      pre.dataset.matches = String(matches.length);
    }

    function show(step) {
      if (!matches.length) return;
      const before = matches[current] && matches[current].row;
      current = (current + step + matches.length) % matches.length;
      if (before !== undefined && before < rows.length) draw(before);
      draw(matches[current].row);
      found.textContent = `${current + 1} of ${matches.length}`;
      follow.checked = false;
      const mark = rows[matches[current].row].querySelector("mark.current");
      if (mark) mark.scrollIntoView({block: "center"});
    }

    function render() {
      frame = 0;
      const {shifted, dirty} = terminal.changes();
      if (shifted) {
        for (const element of rows.splice(0, Math.min(shifted, rows.length))) element.remove();
      }
      const count = terminal.visible();
      while (rows.length > count) rows.pop().remove();
      for (const index of dirty) if (index < rows.length) draw(index);
      if (rows.length < count) {
        const added = document.createDocumentFragment();
        while (rows.length < count) {
          const element = document.createElement("span");
          element.className = "log-line";
          rows.push(element);
          drawLine(element, terminal.segments(rows.length - 1), [], null);
          added.append(element);
        }
        pre.append(added);
      }
      if (query) search();
      if (terminal.dropped || started > 0) {
        cut.hidden = false;
        cut.replaceChildren(`Only the end of this log is shown (the last ${MAX_LINES.toLocaleString("en")} lines at most); `,
                            Object.assign(document.createElement("a"), {href: download.href, textContent: "download the whole log"}),
                            " to see all of it.");
      }
      pre.dataset.lines = String(count);
      if (follow.checked) toEnd();
    }

    const schedule = () => { if (!frame) frame = requestAnimationFrame(render); };

    find.addEventListener("input", () => { query = find.value; current = -1; search(); if (matches.length) show(0); });
    find.addEventListener("keydown", (event) => {
      if (event.key === "Enter") { event.preventDefault(); show(event.shiftKey ? -1 : 1); }
    });
    document.getElementById("log-next").addEventListener("click", () => show(1));
    document.getElementById("log-prev").addEventListener("click", () => show(-1));

    const source = new EventSource(pre.dataset.stream);
    state.textContent = "connecting…";
    source.addEventListener("open", () => { state.textContent = "live"; });
    source.addEventListener("start", (event) => { if (started === null) started = parseInt(event.data, 10) || 0; });
    source.addEventListener("raw", (event) => {
      terminal.write(JSON.parse(event.data));
      schedule();
    });
    source.addEventListener("end", (event) => {
      source.close();
      if (frame) { cancelAnimationFrame(frame); }
      render();
      state.textContent = "ended: " + event.data;
      pre.dataset.ended = event.data;
    });
    source.addEventListener("error", () => {
      if (source.readyState === EventSource.CLOSED) state.textContent = "disconnected; reload to retry";
    });
  }

  if (typeof window !== "undefined") {
    window.StarForgeLog = {Terminal, MAX_LINES};
    document.addEventListener("DOMContentLoaded", () => {
      const pre = document.getElementById("log");
      if (pre) liveLog(pre);
    });
  }
  if (typeof module !== "undefined") module.exports = {Terminal, MAX_LINES};
})();
