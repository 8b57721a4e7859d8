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
        el.classList.remove("updated");
        void el.offsetWidth;
        el.classList.add("updated");
        document.documentElement.dataset.updates = String((+document.documentElement.dataset.updates || 0) + 1);
      })
      .catch(function () {});
  }
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
