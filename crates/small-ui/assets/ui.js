// small ui: live updates. The server sends `change` events naming a workspace and the parts
// of its page that changed; each element marked data-fragment for that part is fetched again
// from its data-src and swapped in. The HTML comes from the server, which escapes every value.
(function () {
  "use strict";
  var live = document.getElementById("live");
  function state(s, text) {
    if (!live) return;
    live.dataset.state = s;
    live.textContent = text;
  }
  function refresh(el) {
    var src = el.getAttribute("data-src");
    if (!src) return Promise.resolve();
    return fetch(src, { headers: { "Accept": "text/html" }, cache: "no-store" })
      .then(function (r) { return r.ok ? r.text() : null; })
      .then(function (html) {
        if (html === null) return;
        el.innerHTML = html;
        tick();
        el.classList.remove("updated");
        void el.offsetWidth;
        el.classList.add("updated");
        document.documentElement.dataset.updates = String((+document.documentElement.dataset.updates || 0) + 1);
      })
      .catch(function () {});
  }
  // Leases count down in the browser: each [data-ends] says when its lease ends and
  // [data-grace] when its grace period does (Unix seconds); done and expired ones stay.
  function left(secs) {
    if (secs < 60) return Math.max(0, secs) + "s left";
    if (secs < 3600) return Math.floor(secs / 60) + "m left";
    return Math.floor(secs / 3600) + "h " + Math.floor((secs % 3600) / 60) + "m left";
  }
  function ago(secs) {
    if (secs < 45) return "just now";
    if (secs < 90) return "1 min ago";
    if (secs < 3600) return Math.floor(secs / 60) + " min ago";
    if (secs < 7200) return "1 h ago";
    if (secs < 86400) return Math.floor(secs / 3600) + " h ago";
    if (secs < 172800) return "1 day ago";
    return Math.floor(secs / 86400) + " days ago";
  }
  function tick() {
    var now = Math.floor(Date.now() / 1000);
    var els = document.querySelectorAll("[data-ends]");
    for (var i = 0; i < els.length; i++) {
      var el = els[i], st = el.getAttribute("data-state");
      if (st !== "held" && st !== "grace") continue;
      var ends = +el.getAttribute("data-ends"), grace = +el.getAttribute("data-grace");
      var text, next;
      if (now < ends) { text = left(ends - now); next = "held"; }
      else if (now < grace) { text = "in grace period"; next = "grace"; }
      else { text = "expired"; next = "expired"; }
      if (el.textContent !== text) el.textContent = text;
      if (next !== st) el.setAttribute("data-state", next);
    }
    var times = document.querySelectorAll("time.rel[datetime]");
    for (var j = 0; j < times.length; j++) {
      var t = Date.parse(times[j].getAttribute("datetime"));
      if (!isNaN(t)) {
        var r = ago(now - Math.floor(t / 1000));
        if (times[j].textContent !== r) times[j].textContent = r;
      }
    }
  }
  tick();
  setInterval(tick, 1000);
  if (!("EventSource" in window)) { state("offline", "live updates unavailable"); return; }
  var es = new EventSource("/events");
  es.addEventListener("ready", function () { state("live", "live"); document.documentElement.dataset.live = "1"; });
  es.addEventListener("change", function (ev) {
    var c;
    try { c = JSON.parse(ev.data); } catch (e) { return; }
    var parts = c.parts || [];
    var els = document.querySelectorAll("[data-fragment]");
    for (var i = 0; i < els.length; i++) {
      var el = els[i];
      if (String(c.ws) === el.getAttribute("data-ws") && parts.indexOf(el.getAttribute("data-fragment")) >= 0) {
        refresh(el);
      }
    }
  });
  es.addEventListener("reload", function () {
    var els = document.querySelectorAll("[data-fragment]");
    for (var i = 0; i < els.length; i++) refresh(els[i]);
  });
  es.onerror = function () { state("offline", "reconnecting…"); };
  es.onopen = function () { state("live", "live"); };
})();
