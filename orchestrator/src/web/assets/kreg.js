// kreg dashboard: live parts of a page follow server-sent events; filters apply on change.
"use strict";
(function () {
  const events = document.body.dataset.events;
  if (events && window.EventSource) {
    let pending = null;
    let busy = false;
    const refresh = async function () {
      pending = null;
      if (busy) { pending = setTimeout(refresh, 100); return; }
      busy = true;
      try {
        const res = await fetch(location.href, { headers: { Accept: "text/html" }, cache: "no-store" });
        if (res.ok) {
          const doc = new DOMParser().parseFromString(await res.text(), "text/html");
          document.querySelectorAll("[data-live][id]").forEach(function (el) {
            const fresh = doc.getElementById(el.id);
            if (fresh) { el.innerHTML = fresh.innerHTML; }
          });
          document.body.dataset.refreshed = String(Date.now());
        }
      } catch (e) {
        // The server went away: the event stream reconnects and triggers a refresh.
      } finally {
        busy = false;
      }
    };
    const source = new EventSource(events);
    source.addEventListener("change", function (ev) {
      try {
        const change = JSON.parse(ev.data);
        if (change.job) {
          const cell = document.querySelector('[data-job="' + change.job + '"]');
          if (cell) {
            cell.className = "cell s-" + change.state;
            cell.dataset.state = change.state;
            cell.title = cell.title.replace(/: [a-z]+$/, ": " + change.state);
          }
        }
      } catch (e) { /* a malformed event only triggers the refresh */ }
      if (!pending) { pending = setTimeout(refresh, 150); }
    });
  }
  // Empty filters stay out of the URL; a changed select applies at once.
  document.querySelectorAll("form.filters").forEach(function (form) {
    form.addEventListener("submit", function () {
      form.querySelectorAll("select, input").forEach(function (el) { if (!el.value) { el.disabled = true; } });
    });
    form.querySelectorAll("select").forEach(function (sel) {
      sel.addEventListener("change", function () { form.requestSubmit(); });
    });
  });
})();
