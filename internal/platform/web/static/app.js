// baton web chat: one websocket to the gateway; the store is the truth, so
// a conversation is (re)loaded whole whenever it is opened or answered.
// Markdown arrives rendered and sanitized by the gateway (html fields);
// everything else is set as text.
"use strict";
(() => {
  const $ = (id) => document.getElementById(id);
  const home = "web:dm:main";
  const appName = "baton";
  // How many lines of a tool's output show before it is folded.
  const foldLines = 6;
  // How long after a message was stored a later one of the person's in
  // the transcript means the first went elsewhere, in milliseconds. (A
  // message said while the one before waits for its turn is stored later
  // than it was said.)
  const staleAfter = 60000;
  // chosen: the person picked a conversation; until then the page follows
  // the most recently active one (where a handoff just landed).
  let ws, current = home, chosen = false, streaming = null, seq = 0, conversations = [];
  // extras: what a conversation showed that is not in its transcript
  // (answers to slash commands, approval questions, notices, the commands
  // typed, and what the person said until the transcript shows it), each
  // {role, text, html, at, approval, answer, id, local, kept}, placed
  // among the transcript's lines by time when it is reloaded.
  const extras = {};
  // unacked: what the person typed that the gateway has not yet stored,
  // by id.
  const unacked = new Map();
  // unread: answers that arrived where the person was not looking.
  const unread = {};
  // shown: the ids of the messages received lately. The gateway sends a
  // message again until a page says it showed it, so one may come twice.
  const shown = new Set(), maxShown = 1000;
  // A reload keeps both (for this tab): the extras stay on the page, and a
  // message sent again after the reload is still known as shown.
  const kept = "baton.page", resent = new Set();
  // historyIds: the ids of the person's messages in the transcript shown.
  let historyIds = new Set();
  // attached: the files waiting to go with the next message, each
  // {file, photo, url}; maxFile is the gateway's bound on one file (it
  // tells it with the conversations).
  let attached = [], maxFile = 25 << 20;
  const maxFiles = 10;
  // sentFiles: the files the person sent, by message id, shown with the
  // message when the transcript does not carry them.
  const sentFiles = {}, maxSentFiles = 200;
  try {
    const k = JSON.parse(sessionStorage.getItem(kept) || "null");
    if (k) {
      Object.assign(extras, k.extras || {});
      // The browser's copies of attached pictures are gone with the old
      // page: their files show by name and size.
      Object.assign(sentFiles, k.sentFiles || {});
      const unlink = (f) => { delete f.url; };
      Object.values(sentFiles).forEach((fs) => fs.forEach(unlink));
      Object.values(extras).forEach((l) => l.forEach((x) => (x.files || []).forEach((f) => { if (f.local) unlink(f); })));
      (k.shown || []).forEach((id) => shown.add(id));
      // Sent again once connected: the gateway drops what it stored already
      // (and its acknowledgement, late, does not move the message).
      (k.unacked || []).forEach((f) => { unacked.set(f.id, f); resent.add(f.id); });
    }
  } catch (e) { /* storage off or its value unreadable: start afresh */ }
  function keep() {
    try { sessionStorage.setItem(kept, JSON.stringify({ extras, shown: [...shown], unacked: [...unacked.values()], sentFiles })); } catch (e) { /* full or off */ }
  }
  // A draft is kept per conversation, across reloads and tabs.
  const draftKey = (key) => "baton.draft." + key;
  function saveDraft() {
    const v = $("input").value;
    try { if (v.trim()) localStorage.setItem(draftKey(current), v); else localStorage.removeItem(draftKey(current)); } catch (e) { /* storage off */ }
  }
  function loadDraft() {
    let v = "";
    try { v = localStorage.getItem(draftKey(current)) || ""; } catch (e) { /* storage off */ }
    $("input").value = v;
    grow();
  }
  // tab names this tab to the gateway across reconnections and reloads:
  // an answer to what this tab asked waits until this tab showed it, and
  // one shown elsewhere while it was away is sent when it is back.
  const tab = (() => {
    const k = "baton.tab";
    let t = null;
    try { t = sessionStorage.getItem(k); } catch (e) { /* storage off */ }
    if (!t) {
      t = "t" + Date.now().toString(36) + "-" + Math.random().toString(36).slice(2, 10);
      try { sessionStorage.setItem(k, t); } catch (e) { /* storage off: a new name each load */ }
    }
    return t;
  })();

  function connect() {
    ws = new WebSocket((location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/ws?tab=" + encodeURIComponent(tab));
    ws.onopen = () => {
      status(unacked.size ? "sending…" : "");
      send({ type: "list" });
      open(current);
      // Whatever the gateway never acknowledged is sent again; it drops
      // what it already stored (same id), so nothing is said twice.
      unacked.forEach((f) => send(f));
    };
    ws.onclose = () => {
      status(unacked.size
        ? "Not connected — your message will be sent when the gateway is back."
        : "Disconnected from the gateway — reconnecting…");
      // A sign-in that expired (or a new token) shows the sign-in page;
      // anything else is the gateway away: try again.
      fetch("/", { method: "HEAD", cache: "no-store" })
        .then((r) => { if (r.status === 401) location.reload(); else setTimeout(connect, 1000); })
        .catch(() => setTimeout(connect, 1000));
    };
    ws.onmessage = (e) => receive(JSON.parse(e.data));
  }
  function send(f) { if (ws && ws.readyState === 1) ws.send(JSON.stringify(f)); }
  function status(t) { $("status").textContent = t; }

  // receive is where every frame from the gateway is handled, once each.
  function receive(f) {
    handle(f);
    if (f.type === "message" || f.type === "ack" || f.type === "history" || f.type === "said") keep();
  }
  function handle(f) {
    switch (f.type) {
      case "conversations":
        conversations = f.items || [];
        if (f.max_file) maxFile = f.max_file;
        if (!chosen && conversations.length && conversations[0].key !== current) { open(conversations[0].key); }
        if (!conversations.some((c) => c.key === current)) conversations.unshift({ key: current, title: titleOf(current) });
        drawList();
        break;
      case "conversation":
        if (!conversations.some((c) => c.key === f.key)) conversations.unshift({ key: f.key, title: f.title });
        if (f.focus) open(f.key);
        drawList();
        break;
      case "history":
        if (f.key === current) showHistory(f.key, f.lines || []);
        break;
      case "delta":
        if (f.key !== current) return;
        if (!streaming) {
          streaming = item("assistant streaming");
          streaming.dataset.raw = "";
          $("messages").append(streaming);
        }
        streaming.dataset.raw += f.text || "";
        if (f.html) setHTML(streaming, f.html);
        else streaming.textContent = streaming.dataset.raw;
        scroll();
        break;
      case "typing":
        if (f.key === current) status("baton is working…");
        break;
      case "message":
        if (!f.id || !shown.has(f.id)) {
          if (f.id) shown.add(f.id);
          if (shown.size > maxShown) shown.delete(shown.values().next().value);
          message(f);
        }
        // Until a page says so, the gateway counts it not delivered and
        // sends it again (to this page or the next one to connect).
        if (f.id) send({ type: "ack", id: f.id });
        break;
      case "answered":
        // Another tab answered the waiting question: its buttons go.
        if (answers[f.text]) {
          let changed = false;
          (extras[f.key] || []).forEach((x) => { if (pending(x)) { x.answer = f.text; changed = true; } });
          if (changed) { keep(); if (f.key === current) send({ type: "open", key: current }); }
        }
        break;
      case "ack": {
        const said = unacked.get(f.id);
        unacked.delete(f.id);
        if (said) stamp(said.key, f.id, resent.delete(f.id) ? 0 : f.at);
        if (!unacked.size) status("");
        break;
      }
      case "said": {
        // Said in another tab on this conversation: shown here too, above
        // the answer that may be streaming already.
        const list = (extras[f.key] = extras[f.key] || []);
        // (A message sent again, after a reload there, may be shown here.)
        if (!f.id || list.some((x) => x.id === f.id) || (f.key === current && historyIds.has(f.id))) break;
        const x = { role: "user", text: f.text || "", at: f.at || Date.now(), id: f.id, cmd: (f.text || "").startsWith("/"), files: f.files };
        if (f.files) rememberFiles(f.id, f.files);
        list.push(x);
        if (f.key !== current) break;
        const li = userItem(x.text, false, x.files);
        if (streaming) streaming.before(li); else $("messages").append(li);
        scroll();
        break;
      }
      case "error": {
        // The gateway answered, so resending the same frame will not help.
        // A message it refused is no longer shown as said: its words go
        // back to the input, to send again.
        const said = f.id && unacked.get(f.id);
        if (f.id) unacked.delete(f.id);
        if (said) {
          const list = extras[said.key] || [];
          const i = list.findIndex((x) => x.id === f.id);
          if (i >= 0) list.splice(i, 1);
          keep();
          if (said.key === current) {
            if (!$("input").value) { $("input").value = said.text; grow(); saveDraft(); }
            send({ type: "open", key: current });
          }
        }
        status("⚠ " + f.error);
        break;
      }
    }
  }

  // message is an assistant message: an answer, a notice or an approval
  // question.
  function message(f) {
    const list = (extras[f.key] = extras[f.key] || []);
    const x = { role: "assistant", text: f.text, html: f.html, at: f.at || Date.now(), approval: f.approval, file: f.file };
    if (f.elsewhere) {
      // The session is held elsewhere: what the person said here and the
      // transcript does not show is kept until /continue.
      list.forEach((e) => { if (e.role === "user" && e.id && !e.cmd) e.kept = true; });
    }
    if (f.approval && f.approval.expired) {
      // Nobody answered in time: the question is no longer waiting.
      list.forEach((e) => { if (pending(e) && e.approval.tool === f.approval.tool) e.answer = "expired"; });
      x.approval = null;
    }
    list.push(x);
    if (f.key !== current || document.hidden) markUnread(f.key);
    if (f.key !== current) return;
    status("");
    // The store has the whole turn (tool calls included): reload it.
    send({ type: "open", key: current });
  }

  function pending(x) { return x.approval && !x.approval.expired && !x.answer; }

  // stamp gives what the person typed the gateway's time once stored,
  // so it sorts with the transcript's lines.
  function stamp(key, id, at) {
    const x = (extras[key] || []).find((e) => e.id === id);
    if (x) { x.at = at || x.at; delete x.local; }
  }

  function titleOf(key) {
    const c = conversations.find((c) => c.key === key);
    if (c && c.title) return c.title;
    return key === home ? "Home" : "Conversation";
  }
  function drawList() {
    const ul = $("conversations");
    ul.replaceChildren();
    for (const c of conversations) {
      const li = document.createElement("li");
      const name = document.createElement("span");
      name.className = "name";
      name.textContent = c.title || (c.key === home ? "Home" : c.key);
      li.append(name);
      li.dataset.key = c.key;
      if (c.key === current) li.classList.add("active");
      if (unread[c.key]) {
        li.classList.add("unread");
        const badge = document.createElement("span");
        badge.className = "badge";
        badge.textContent = unread[c.key];
        badge.setAttribute("aria-label", unread[c.key] + " unread");
        li.append(badge);
      }
      li.onclick = () => { chosen = true; drawer(false); open(c.key); };
      ul.append(li);
    }
    $("title").textContent = titleOf(current);
    const n = Object.values(unread).reduce((a, b) => a + b, 0);
    document.title = (n ? "(" + n + ") " : "") + appName;
    $("menu").classList.toggle("unread", Object.keys(unread).some((k) => k !== current && unread[k]));
  }
  function markUnread(key) {
    unread[key] = (unread[key] || 0) + 1;
    drawList();
  }
  function seen() {
    if (document.hidden || !unread[current]) return;
    delete unread[current];
    drawList();
  }
  function open(key) {
    const moved = key !== current;
    current = key;
    if (moved) loadDraft();
    delete unread[key];
    drawList();
    $("messages").replaceChildren();
    streaming = null;
    send({ type: "open", key });
  }

  // showHistory shows a conversation's transcript with what the page
  // alone knows of it (extras, messages not yet stored) in place.
  function showHistory(key, lines) {
    const said = new Set(lines.filter((l) => l.role !== "tool").map((l) => l.role + "\n" + l.text));
    const ids = (historyIds = new Set(lines.filter((l) => l.id).map((l) => l.id)));
    const lastSaid = Math.max(0, ...lines.filter((l) => l.role === "user" && l.at).map((l) => l.at));
    // What the person said leaves the extras once the transcript has it
    // (by its id), or once stored well before a later message of theirs
    // the transcript has (it went to another session: a /new came
    // between); the rest by their text.
    // A file baton sent, once the transcript carries it (with the
    // result of the tool that sent it, say).
    const inTranscript = (x) => x.file ? lines.some((l) => l.role !== "user" && (l.files || []).some((f) => f.name === x.file.name && f.size === x.file.size))
      : x.id && !x.cmd ? ids.has(x.id) || (!x.local && x.at < lastSaid - staleAfter) : said.has(x.role + "\n" + x.text);
    // What the person said that the transcript does not have yet waits
    // for its turn: it comes after the transcript's lines.
    const lastAt = Math.max(0, ...lines.map((l) => l.at || 0));
    const when = (x) => x.id && !x.cmd ? Math.max(x.at, lastAt) : x.at;
    const list = (extras[key] = (extras[key] || []).filter((x) => !inTranscript(x)).sort((a, b) => when(a) - when(b)));
    const ol = $("messages");
    ol.replaceChildren();
    streaming = null;
    const cards = [];
    let next = 0;
    const placeExtras = (before) => {
      while (next < list.length && (before === undefined || when(list[next]) < before)) showExtra(list[next++]);
    };
    for (const l of lines) {
      placeExtras(l.at);
      if (l.role === "tool") { toolLine(l, cards); continue; }
      if (l.role === "user") { ol.append(userItem(l.text, l.kept, l.files || sentFiles[l.id])); continue; }
      const li = item(l.role);
      if (l.html) setHTML(li, l.html); else li.textContent = l.text;
      if (l.files) li.prepend(...l.files.map(fileView));
      ol.append(li);
    }
    placeExtras();
    scroll();
  }

  function item(cls) {
    const li = document.createElement("li");
    li.className = cls;
    return li;
  }
  // userItem is what the person said; kept marks a message said while
  // the session was elsewhere, which runs when /continue brings it here.
  function userItem(text, kept, files) {
    const li = item(kept ? "user kept" : "user");
    if (files && files.length) li.append(...files.map(fileView));
    const said = document.createElement("span");
    said.className = "said";
    said.textContent = text;
    if (text || !files || !files.length) li.append(said);
    if (kept) {
      const note = document.createElement("span");
      note.className = "kept-note";
      note.textContent = "Kept: it runs when you /continue here.";
      li.append(note);
    }
    return li;
  }
  function showExtra(x) {
    if (x.role === "user") { $("messages").append(userItem(x.text, x.kept, x.files)); return; }
    if (x.approval) {
      // Placed before the card of the call it asks about.
      const card = approvalCard(x), last = $("messages").lastElementChild;
      if (last && last.classList.contains("tool") && last.dataset.tool === x.approval.tool) last.before(card);
      else $("messages").append(card);
      return;
    }
    const li = item("assistant");
    if (x.html) setHTML(li, x.html); else li.textContent = x.text;
    if (x.file) li.prepend(fileView(x.file));
    $("messages").append(li);
  }

  // fileView shows a file in a message: a picture (PNG, JPEG, GIF or
  // WebP, as the gateway says) as a preview, anything else (SVG and HTML
  // included) as a link that downloads it, with its name and size; one
  // the page cannot fetch, by its name and size alone.
  function fileView(f) {
    const label = (f.name || "file") + " · " + formatSize(f.size || 0);
    if (f.url && f.image) {
      const a = document.createElement("a");
      a.className = "file-image";
      a.href = f.url;
      a.target = "_blank";
      a.rel = "noopener";
      a.title = label;
      const img = document.createElement("img");
      img.src = f.url;
      img.alt = f.name || "picture";
      img.onload = scroll;
      a.append(img);
      return a;
    }
    const el = document.createElement(f.url ? "a" : "span");
    el.className = "file";
    if (f.url) {
      el.href = f.url;
      el.download = f.name || "";
    }
    el.textContent = label;
    return el;
  }
  // formatSize writes a size as the gateway does ("1.5 MB").
  function formatSize(n) {
    const one = (v) => { const s = v.toFixed(1); return s.endsWith(".0") ? s.slice(0, -2) : s; };
    if (n < 1024) return n + " bytes";
    if (n < 1 << 20) return one(n / 1024) + " kB";
    if (n < 1 << 30) return one(n / (1 << 20)) + " MB";
    return one(n / (1 << 30)) + " GB";
  }
  function rememberFiles(id, files) {
    sentFiles[id] = files;
    const ids = Object.keys(sentFiles);
    if (ids.length > maxSentFiles) delete sentFiles[ids[0]];
  }
  // isImage: only these are shown as pictures; never SVG.
  const isImage = (type) => ["image/png", "image/jpeg", "image/gif", "image/webp"].includes((type || "").toLowerCase());

  // attach adds files to the next message, refusing one over the bound
  // (or past the count) in one line, as the gateway would.
  function attach(files, photo) {
    for (const file of files) {
      const name = file.name || (photo ? "photo" : "file");
      if (file.size > maxFile) {
        status("⚠ " + name + " is " + formatSize(file.size) + ", over the " + formatSize(maxFile) + " limit for files from the web chat");
        continue;
      }
      if (attached.length >= maxFiles) {
        status("⚠ at most " + maxFiles + " files go with one message");
        break;
      }
      attached.push({ file, name, photo, url: isImage(file.type) ? URL.createObjectURL(file) : "" });
    }
    drawChips();
  }
  function drawChips() {
    const ul = $("chips");
    ul.replaceChildren();
    attached.forEach((a, i) => {
      const li = document.createElement("li");
      li.className = "chip";
      if (a.url) {
        const img = document.createElement("img");
        img.src = a.url;
        img.alt = "";
        li.append(img);
      }
      const name = document.createElement("span");
      name.className = "chip-name";
      name.textContent = a.name;
      const size = document.createElement("span");
      size.className = "chip-size";
      size.textContent = formatSize(a.file.size);
      const remove = document.createElement("button");
      remove.type = "button";
      remove.className = "chip-remove";
      remove.setAttribute("aria-label", "Remove " + a.name);
      remove.textContent = "×";
      remove.onclick = () => { attached.splice(i, 1); drawChips(); $("input").focus(); };
      li.append(name, size, remove);
      ul.append(li);
    });
  }

  // sendFiles sends what is typed with the attached files, over HTTP
  // (the gateway answers once it stored them); refused or not sent, the
  // words and the files come back to the composer.
  // retry is the last upload that was not answered as stored: sent again
  // unchanged, it keeps its id, so the gateway drops it should it have
  // stored it after all (an answer lost with the connection).
  let retry = null;
  function sendFiles(text) {
    const files = attached;
    attached = [];
    drawChips();
    const key = current;
    const again = retry && retry.key === key && retry.text === text && retry.files.length === files.length && retry.files.every((a, i) => a === files[i]);
    const id = again ? retry.id : "p" + Date.now().toString(36) + "-" + (++seq) + "-" + Math.random().toString(36).slice(2, 8);
    retry = null;
    const shownFiles = files.map((a) => ({ name: a.name, size: a.file.size, type: a.file.type, url: a.url, image: !!a.url, local: true }));
    const x = { role: "user", text, at: Date.now(), local: true, id, files: shownFiles };
    (extras[key] = extras[key] || []).push(x);
    rememberFiles(id, shownFiles);
    showExtra(x);
    keep();
    scroll();
    status("sending…");
    const form = new FormData();
    form.append("key", key);
    form.append("id", id);
    form.append("text", text);
    form.append("tab", tab);
    for (const a of files) form.append(a.photo ? "photo" : "file", a.file, a.name);
    const failed = (why) => {
      const list = extras[key] || [];
      const i = list.indexOf(x);
      if (i >= 0) list.splice(i, 1);
      delete sentFiles[id];
      keep();
      if (key === current) {
        if (!$("input").value) { $("input").value = text; grow(); saveDraft(); }
        attached = files.concat(attached);
        retry = { key, id, text, files };
        drawChips();
        send({ type: "open", key: current });
      }
      status("⚠ " + why);
    };
    fetch("/upload", { method: "POST", body: form, credentials: "same-origin", cache: "no-store" })
      .then((r) => r.ok ? r.json().then((f) => { stamp(key, id, f.at); keep(); status(""); })
        : r.text().then((t) => failed(t.trim() || "not sent (" + r.status + ")")))
      .catch(() => failed("not sent: the gateway is not reachable; send again"));
  }

  // setHTML shows markdown the gateway rendered and sanitized, with a
  // copy button on each code block.
  function setHTML(el, html) {
    el.classList.add("md");
    el.innerHTML = html;
    columns(el);
    for (const pre of el.querySelectorAll("pre")) {
      const box = document.createElement("div");
      box.className = "code";
      pre.replaceWith(box);
      const copy = document.createElement("button");
      copy.type = "button";
      copy.className = "copy";
      copy.textContent = "Copy";
      copy.onclick = () => copyText(pre.textContent, copy);
      box.append(pre, copy); // beside the code, never over it
    }
    for (const table of el.querySelectorAll("table")) {
      const wrap = document.createElement("div");
      wrap.className = "table";
      table.replaceWith(wrap);
      wrap.append(table);
    }
  }
  // columns shows each block of aligned columns (as /help writes them) as
  // rows of a name and what it says, which wraps: side by side, every
  // block of the message in line, on a wide screen; one under the other
  // on a phone.
  function columns(el) {
    const blocks = [...el.querySelectorAll("pre > code.language-columns")];
    let width = 0;
    for (const code of blocks) {
      const grid = document.createElement("div");
      grid.className = "columns";
      for (const line of code.textContent.replace(/\n$/, "").split("\n")) {
        const gap = line.search(/ {2,}/);
        const row = document.createElement("div");
        row.className = "col-row";
        const name = document.createElement("span");
        name.className = "col-name";
        name.textContent = gap < 0 ? line : line.slice(0, gap);
        const desc = document.createElement("span");
        desc.className = "col-desc";
        desc.textContent = gap < 0 ? "" : line.slice(gap).trim();
        width = Math.max(width, name.textContent.length);
        row.append(name, desc);
        grid.append(row);
      }
      code.parentElement.replaceWith(grid);
    }
    if (width) el.style.setProperty("--col-name", width + "ch");
  }
  function copyText(text, button) {
    const done = (ok) => {
      button.textContent = ok ? "Copied" : "Copy failed";
      setTimeout(() => { button.textContent = "Copy"; }, 1500);
    };
    const fallback = () => {
      const ta = document.createElement("textarea");
      ta.value = text;
      ta.setAttribute("readonly", "");
      ta.style.position = "fixed";
      ta.style.opacity = "0";
      document.body.append(ta);
      ta.select();
      let ok = false;
      try { ok = document.execCommand("copy"); } catch (e) { ok = false; }
      ta.remove();
      done(ok);
    };
    if (navigator.clipboard && window.isSecureContext) navigator.clipboard.writeText(text).then(() => done(true), fallback);
    else fallback();
  }

  // toolLine shows a tool call as a card, and its result folded into the
  // card of its call, with the files the tool sent.
  function toolLine(l, cards) {
    if (l.call === "result") {
      const card = cards.findLast((c) => !c.dataset.done && (l.call_id ? c.dataset.call === l.call_id : c.dataset.tool === l.tool));
      if (card) { addResult(card, l.detail || "", l.files); return; }
    }
    const card = item("tool");
    card.dataset.tool = l.tool || "";
    if (l.call_id) card.dataset.call = l.call_id;
    const head = document.createElement("div");
    head.className = "tool-head";
    const name = document.createElement("span");
    name.className = "tool-name";
    name.textContent = l.tool || "tool";
    const args = document.createElement("span");
    args.className = "tool-args";
    args.textContent = l.call === "call" ? l.summary || "" : "";
    head.append(name, args);
    card.append(head);
    if (l.call === "call") {
      const detail = document.createElement("pre");
      detail.className = "tool-detail";
      detail.textContent = l.detail || "";
      card.append(detail);
      card.dataset.more = l.summary_cut ? "1" : "";
    } else {
      addResult(card, l.detail || l.text || "", l.files);
    }
    cards.push(card);
    $("messages").append(card);
    moreButton(card);
  }
  function addResult(card, text, files) {
    card.dataset.done = "1";
    const out = document.createElement("pre");
    out.className = "tool-result";
    out.textContent = text;
    const lines = text.split("\n").length;
    if (lines > foldLines) {
      out.classList.add("folded");
      out.style.setProperty("--fold", foldLines);
      card.dataset.lines = lines;
    }
    card.append(out);
    if (files && files.length) {
      const box = document.createElement("div");
      box.className = "tool-files";
      box.append(...files.map(fileView));
      card.append(box);
    }
    moreButton(card);
  }
  // moreButton offers to unfold a card that hides something: a long
  // output, or arguments longer than their summary.
  function moreButton(card) {
    let b = card.querySelector(".tool-more");
    const lines = card.dataset.lines;
    if (!lines && !card.dataset.more) { if (b) b.remove(); return; }
    if (!b) {
      b = document.createElement("button");
      b.type = "button";
      b.className = "tool-more";
      b.onclick = () => { card.classList.toggle("open"); label(); };
    }
    card.append(b); // last, below the output
    const label = () => {
      b.textContent = card.classList.contains("open") ? "Show less" : lines ? "Show all " + lines + " lines" : "Show arguments";
      b.setAttribute("aria-expanded", card.classList.contains("open"));
    };
    label();
  }

  // approvalCard shows an approval question with its answers as buttons;
  // once answered it shows the answer instead.
  const answers = { approve: "Allowed once", always: "Always allowed in this session", deny: "Denied", expired: "Not answered in time: it did not run" };
  function approvalCard(x) {
    const card = item("approval");
    const q = document.createElement("div");
    q.className = "approval-q";
    const tool = document.createElement("strong");
    tool.textContent = x.approval.tool;
    q.append("May I run ", tool, "?");
    const subject = document.createElement("pre");
    subject.textContent = x.approval.subject || "";
    card.append(q, subject);
    if (x.answer) {
      const a = document.createElement("div");
      a.className = "approval-answer " + x.answer;
      a.textContent = (x.answer === "deny" || x.answer === "expired" ? "✗ " : "✓ ") + answers[x.answer];
      card.append(a);
      card.dataset.state = x.answer;
    } else {
      card.dataset.state = "pending";
      const actions = document.createElement("div");
      actions.className = "approval-actions";
      for (const [cmd, label] of [["approve", "Allow once"], ["always", "Always (this session)"], ["deny", "Deny"]]) {
        const b = document.createElement("button");
        b.type = "button";
        b.dataset.answer = cmd;
        b.textContent = label;
        b.onclick = () => { answer(x, cmd); card.replaceWith(approvalCard(x)); };
        actions.append(b);
      }
      card.append(actions);
    }
    return card;
  }
  function answer(x, cmd) {
    x.answer = cmd;
    keep();
    say("/" + cmd, false);
  }

  function scroll() { const m = $("messages"); m.scrollTop = m.scrollHeight; }
  // When the list changes size (a rotation, a keyboard, the input
  // growing, baton working), the newest message stays in view if it was:
  // the list was at its bottom at its former height.
  let height = $("messages").clientHeight;
  new ResizeObserver(() => {
    const m = $("messages");
    if (m.scrollHeight - m.scrollTop - Math.max(height, m.clientHeight) < 8) scroll();
    height = m.clientHeight;
  }).observe($("messages"));

  function say(text, show) {
    const id = "p" + Date.now().toString(36) + "-" + (++seq) + "-" + Math.random().toString(36).slice(2, 8);
    const f = { type: "say", key: current, text, id };
    unacked.set(id, f);
    if (show) {
      // Shown until the transcript has it (a command: for good).
      const x = { role: "user", text, at: Date.now(), local: true, id, cmd: text.startsWith("/") };
      (extras[current] = extras[current] || []).push(x);
      showExtra(x);
    }
    keep();
    scroll();
    if (ws && ws.readyState === 1) {
      send(f);
      status("sending…");
    } else {
      status("Not connected — your message will be sent when the gateway is back.");
    }
  }
  function submit() {
    const text = $("input").value.trim();
    if (!text && !attached.length) return;
    $("input").value = "";
    grow();
    saveDraft();
    if (attached.length) { sendFiles(text); return; }
    const cmd = /^\/(approve|yes|once|always|deny|no)\s*$/.exec(text);
    const waiting = cmd && (extras[current] || []).findLast(pending);
    if (waiting) { // typed instead of clicked: the card shows the answer
      answer(waiting, { yes: "approve", once: "approve", no: "deny" }[cmd[1]] || cmd[1]);
      send({ type: "open", key: current });
      return;
    }
    say(text, true);
  }

  // grow fits the input to what is typed, up to a third of the screen.
  function grow() {
    const el = $("input");
    if (!el.value) { el.style.height = ""; return; } // the placeholder may wrap; one row is enough
    el.style.height = "auto";
    el.style.height = Math.min(el.scrollHeight + 2, Math.max(window.innerHeight / 3, 80)) + "px";
  }
  function drawer(openIt) {
    document.body.classList.toggle("drawer", openIt);
    $("menu").setAttribute("aria-expanded", openIt);
  }

  $("composer").onsubmit = (e) => { e.preventDefault(); submit(); };
  $("input").onkeydown = (e) => {
    if (e.key === "Enter" && !e.shiftKey && !e.isComposing) { e.preventDefault(); submit(); }
  };
  $("input").oninput = () => { grow(); saveDraft(); };
  $("attach").onclick = () => $("files").click();
  $("files").onchange = () => { attach([...$("files").files], false); $("files").value = ""; $("input").focus(); };
  // A pasted picture (a screenshot) is attached; pasted text is pasted.
  $("input").addEventListener("paste", (e) => {
    const files = [...(e.clipboardData ? e.clipboardData.files : [])];
    if (!files.length) return;
    if (!e.clipboardData.types.includes("text/plain")) e.preventDefault();
    attach(files, true);
  });
  // Files dropped anywhere on the page are attached.
  const carriesFiles = (e) => e.dataTransfer && [...e.dataTransfer.types].includes("Files");
  document.addEventListener("dragover", (e) => { if (carriesFiles(e)) { e.preventDefault(); document.body.classList.add("dropping"); } });
  document.addEventListener("dragleave", (e) => { if (!e.relatedTarget) document.body.classList.remove("dropping"); });
  document.addEventListener("drop", (e) => {
    document.body.classList.remove("dropping");
    if (!carriesFiles(e)) return;
    e.preventDefault();
    attach([...e.dataTransfer.files], false);
  });
  $("new").onclick = () => { chosen = true; drawer(false); send({ type: "new" }); };
  $("menu").onclick = () => drawer(!document.body.classList.contains("drawer"));
  $("scrim").onclick = () => drawer(false);
  document.addEventListener("keydown", (e) => { if (e.key === "Escape") drawer(false); });
  document.addEventListener("visibilitychange", seen);
  window.addEventListener("focus", seen);
  loadDraft();
  connect();
})();
