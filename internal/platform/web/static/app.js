// baton web chat: one websocket to the gateway; the store is the truth, so
// a conversation is (re)loaded whole whenever it is opened or answered.
"use strict";
(() => {
  const $ = (id) => document.getElementById(id);
  const home = "web:dm:main";
  // chosen: the person picked a conversation; until then the page follows
  // the most recently active one (where a handoff just landed).
  let ws, current = home, chosen = false, streaming = null, seq = 0, conversations = [];
  // extras: messages sent to a conversation that are not in its transcript
  // (answers to slash commands, notices), shown after the history.
  const extras = {};
  // unacked: what the person typed that the gateway has not yet stored.
  const unacked = new Map();

  function connect() {
    ws = new WebSocket((location.protocol === "https:" ? "wss://" : "ws://") + location.host + "/ws");
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
      setTimeout(connect, 1000);
    };
    ws.onmessage = (e) => receive(JSON.parse(e.data));
  }
  function send(f) { if (ws && ws.readyState === 1) ws.send(JSON.stringify(f)); }
  function status(t) { $("status").textContent = t; }

  function receive(f) {
    switch (f.type) {
      case "conversations":
        conversations = f.items || [];
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
        if (f.key !== current) return;
        $("messages").replaceChildren();
        streaming = null;
        (f.lines || []).forEach((l) => add(l.role, l.text, l.tool));
        {
          const said = new Set((f.lines || []).filter((l) => l.role === "assistant").map((l) => l.text));
          extras[f.key] = (extras[f.key] || []).filter((t) => !said.has(t));
          extras[f.key].forEach((t) => add("assistant", t));
        }
        break;
      case "delta":
        if (f.key !== current) return;
        if (!streaming) streaming = add("assistant streaming", "");
        streaming.dataset.raw = (streaming.dataset.raw || "") + f.text;
        streaming.textContent = streaming.dataset.raw;
        scroll();
        break;
      case "typing":
        if (f.key === current) status("baton is working…");
        break;
      case "message":
        (extras[f.key] = extras[f.key] || []).push(f.text);
        if (f.key !== current) { mark(f.key); return; }
        status("");
        // The store has the whole turn (tool calls included): reload it.
        send({ type: "open", key: current });
        break;
      case "ack":
        unacked.delete(f.id);
        if (!unacked.size) status("");
        break;
      case "error":
        // The gateway answered, so resending the same frame will not help.
        if (f.id) unacked.delete(f.id);
        status("⚠ " + f.error);
        break;
    }
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
      li.textContent = c.title || (c.key === home ? "Home" : c.key);
      li.dataset.key = c.key;
      if (c.key === current) li.className = "active";
      li.onclick = () => { chosen = true; open(c.key); };
      ul.append(li);
    }
    $("title").textContent = titleOf(current);
  }
  function mark(key) {
    const li = [...$("conversations").children].find((li) => li.dataset.key === key);
    if (li && !li.textContent.startsWith("• ")) li.textContent = "• " + li.textContent;
  }
  function open(key) {
    current = key;
    drawList();
    $("messages").replaceChildren();
    streaming = null;
    send({ type: "open", key });
  }

  // render shows text safely: fenced code as <pre>, everything else as text.
  function render(el, text) {
    const parts = text.split(/^```[^\n]*\n?/m);
    parts.forEach((p, i) => {
      if (i % 2 === 1) {
        const pre = document.createElement("pre");
        const code = document.createElement("code");
        code.textContent = p.replace(/\n$/, "");
        pre.append(code);
        el.append(pre);
      } else if (p) {
        inline(el, p);
      }
    });
  }
  // inline shows `code` and **bold** as such; everything else as text.
  function inline(el, text) {
    text.split(/(`[^`\n]+`|\*\*[^*\n]+\*\*)/).forEach((t) => {
      if (!t) return;
      let node;
      if (t.length > 2 && t.startsWith("`") && t.endsWith("`")) {
        node = document.createElement("code");
        node.textContent = t.slice(1, -1);
      } else if (t.length > 4 && t.startsWith("**") && t.endsWith("**")) {
        node = document.createElement("strong");
        node.textContent = t.slice(2, -2);
      } else {
        node = document.createTextNode(t);
      }
      el.append(node);
    });
  }
  function add(role, text, tool) {
    const li = document.createElement("li");
    li.className = role;
    if (tool) li.dataset.tool = tool;
    render(li, text);
    $("messages").append(li);
    scroll();
    return li;
  }
  function scroll() { const m = $("messages"); m.scrollTop = m.scrollHeight; }

  function submit() {
    const text = $("input").value.trim();
    if (!text) return;
    $("input").value = "";
    add("user", text);
    const id = "p" + Date.now().toString(36) + "-" + (++seq) + "-" + Math.random().toString(36).slice(2, 8);
    const f = { type: "say", key: current, text, id };
    unacked.set(id, f);
    if (ws && ws.readyState === 1) {
      send(f);
      status("sending…");
    } else {
      status("Not connected — your message will be sent when the gateway is back.");
    }
  }
  $("composer").onsubmit = (e) => { e.preventDefault(); submit(); };
  $("input").onkeydown = (e) => { if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); submit(); } };
  $("new").onclick = () => { chosen = true; send({ type: "new" }); };
  connect();
})();
