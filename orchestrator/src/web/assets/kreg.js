// kreg dashboard: live parts of a page follow server-sent events; filters apply on change.
"use strict";
(function () {
  const events = document.body.dataset.events;
  if (events && window.EventSource) {
    // A part marked data-live with an id is made again from the page fetched anew.
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
    // A report of a running run: its rows updated in place, cell by cell.
    const live = document.getElementById("report-live");
    const same = function (td, html) {
      const t = document.createElement("template");
      t.innerHTML = html;
      return t.innerHTML === td.innerHTML;
    };
    let rowsPending = null;
    let rowsBusy = false;
    const updateRows = async function () {
      rowsPending = null;
      if (rowsBusy) { rowsPending = setTimeout(updateRows, 100); return; }
      rowsBusy = true;
      try {
        const res = await fetch(live.dataset.rows, { headers: { Accept: "application/json" }, cache: "no-store" });
        if (res.ok) {
          const data = await res.json();
          const notes = document.getElementById("report-notes");
          if (notes && !same(notes, data.notes)) { notes.innerHTML = data.notes; }
          let missing = false;
          data.rows.forEach(function (pair) {
            const tr = document.getElementById(pair[0]);
            if (!tr) { missing = true; return; }
            let changed = false;
            pair[1].forEach(function (html, i) {
              const td = tr.children[i];
              if (td && !same(td, html)) { td.innerHTML = html; changed = true; }
            });
            if (changed) {
              tr.dataset.updated = String(Date.now());
              tr.classList.remove("flash");
              void tr.offsetWidth;
              tr.classList.add("flash");
            }
          });
          // A row that was not there yet: the tables are made again from the page.
          if (missing) { location.reload(); }
          document.body.dataset.refreshed = String(Date.now());
        }
      } catch (e) {
        // Tried again on the next event, or when the stream comes back.
      } finally {
        rowsBusy = false;
      }
    };
    // A run's page: its facts and failed jobs from the run's live parts (two small reads),
    // its job cells from the events themselves; the whole page only when jobs were added.
    const runLive = document.querySelector("[data-live-run]");
    let runPending = null;
    let runBusy = false;
    const updateRun = async function () {
      runPending = null;
      if (runBusy) { runPending = setTimeout(updateRun, 100); return; }
      runBusy = true;
      try {
        const res = await fetch(runLive.dataset.liveRun, { headers: { Accept: "application/json" }, cache: "no-store" });
        if (res.ok) {
          const data = await res.json();
          if (String(data.jobs) !== runLive.dataset.jobs) { location.reload(); return; }
          ["run-state", "run-progress", "run-duration", "failed-jobs"].forEach(function (id) {
            const el = document.getElementById(id);
            if (el && el.innerHTML !== data[id]) { el.innerHTML = data[id]; }
          });
          document.body.dataset.refreshed = String(Date.now());
        }
      } catch (e) {
        // Tried again on the next event, or when the stream comes back.
      } finally {
        runBusy = false;
      }
    };
    const update = function () {
      if (runLive) {
        if (!runPending) { runPending = setTimeout(updateRun, 150); }
      } else if (live) {
        if (!rowsPending) { rowsPending = setTimeout(updateRows, 150); }
      } else if (!pending) {
        pending = setTimeout(refresh, 150);
      }
    };
    // While the stream is down the page says so; when it is back the page catches up.
    const banner = document.createElement("p");
    banner.id = "stream-down";
    banner.className = "warning";
    banner.setAttribute("role", "status");
    banner.hidden = true;
    const main = document.querySelector("main");
    if (main) { main.prepend(banner); }
    let lost = false;
    const connect = function () {
      const source = new EventSource(events);
      source.addEventListener("open", function () {
        if (lost) {
          lost = false;
          banner.hidden = true;
          document.body.dataset.stream = "up";
          // Events were missed: a run's page catches up whole, once; the others as usual.
          if (runLive) { refresh(); } else { update(); }
        }
      });
      source.addEventListener("error", function () {
        if (!lost) {
          lost = true;
          banner.textContent = "Live updates stopped at " + new Date().toLocaleTimeString() +
            ": this page shows what it knew then. Reconnecting…";
          banner.hidden = false;
          document.body.dataset.stream = "down";
        }
        // A stream the browser gave up on is opened again by hand.
        if (source.readyState === EventSource.CLOSED) { setTimeout(connect, 2000); }
      });
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
        } catch (e) { /* a malformed event only triggers the update */ }
        update();
      });
    };
    connect();
  }
  // A strip's dots one by one: the pointer names the nearest replicate (its value, run,
  // boot and job, read once per strip from the samples API) and a click opens its job.
  // Without the data (or script) the strip's link opens the list of the row's values.
  const tip = document.createElement("div");
  tip.id = "dot-tip";
  tip.setAttribute("role", "status");
  tip.hidden = true;
  document.body.appendChild(tip);
  const known = new WeakMap();
  const stripOf = function (ev) {
    const svg = ev.target.closest && ev.target.closest("a > svg.strip");
    return svg && svg.parentElement.getAttribute("href") ? svg : null;
  };
  const samplesOf = function (svg) {
    if (!known.has(svg)) {
      const href = svg.parentElement.getAttribute("href");
      known.set(svg, fetch(href.replace(/^\/runs\//, "/api/v1/runs/"), { headers: { Accept: "application/json" } })
        .then(function (res) { return res.ok ? res.json() : null; })
        .then(function (view) { return view ? view.samples.filter(function (s) { return !s.warmup; }) : null; })
        .catch(function () { return null; }));
    }
    return known.get(svg);
  };
  const nearest = function (svg, ev) {
    const path = svg.querySelector("path.dots");
    if (!path) { return -1; }
    const box = svg.getBoundingClientRect();
    const vb = svg.viewBox.baseVal;
    const x = (ev.clientX - box.left) * vb.width / box.width;
    const y = (ev.clientY - box.top) * vb.height / box.height;
    const re = /M([-\d.]+) ([-\d.]+)h0/g;
    let m, i = 0, best = -1, dist = Infinity;
    while ((m = re.exec(path.getAttribute("d")))) {
      const d = Math.pow(parseFloat(m[1]) - x, 2) + Math.pow((parseFloat(m[2]) - y) / 4, 2);
      if (d < dist) { dist = d; best = i; }
      i += 1;
    }
    return best;
  };
  document.addEventListener("mousemove", function (ev) {
    const svg = stripOf(ev);
    if (!svg) { tip.hidden = true; return; }
    const i = nearest(svg, ev);
    samplesOf(svg).then(function (all) {
      const s = all && all[i];
      if (!s) { return; }
      tip.textContent = s.value + (s.unit ? " " + s.unit : "") + " · run " + s.iteration + " · boot " + s.boot +
        " · job " + s.job_id + " (click to open it)";
      tip.hidden = false;
      // Beside the pointer, on its left when the right edge is near: never past the window.
      const w = tip.offsetWidth;
      const right = ev.clientX + 12 + w <= document.documentElement.clientWidth - 4;
      tip.style.left = Math.max(window.scrollX + 4, right ? ev.pageX + 12 : ev.pageX - 12 - w) + "px";
      tip.style.top = (ev.pageY + 14) + "px";
      svg.dataset.dot = String(i);
    });
  });
  document.addEventListener("click", function (ev) {
    const svg = stripOf(ev);
    if (!svg || ev.button !== 0 || ev.ctrlKey || ev.metaKey || ev.shiftKey) { return; }
    ev.preventDefault();
    const i = nearest(svg, ev);
    const list = svg.parentElement.getAttribute("href");
    samplesOf(svg).then(function (all) {
      location.href = all && all[i] ? "/jobs/" + all[i].job_id : list;
    });
  });
  // Empty filters stay out of the URL; a changed select applies at once.
  // A table wider than its box (a phone) says so above it, naming the columns out of
  // sight, and its right edge is shaded.
  const hints = function () {
    document.querySelectorAll(".scroll").forEach(function (box) {
      const over = box.scrollWidth > box.clientWidth + 1;
      box.classList.toggle("overflows", over);
      let hint = box.previousElementSibling;
      if (!(hint && hint.classList.contains("scroll-hint"))) {
        if (!over) { return; }
        hint = document.createElement("p");
        hint.className = "scroll-hint";
        box.parentNode.insertBefore(hint, box);
      }
      const hidden = Array.prototype.filter
        .call(box.querySelectorAll("thead th"), function (th) {
          return th.offsetLeft + th.offsetWidth > box.scrollLeft + box.clientWidth + 1;
        })
        .map(function (th) { return th.textContent.trim(); })
        .filter(function (t) { return t; });
      hint.textContent = "⇆ This table is wider than the screen: swipe it sideways for the rest" +
        (hidden.length ? " (" + hidden.join(", ") + ")." : ".");
      hint.hidden = !over;
    });
  };
  hints();
  window.addEventListener("resize", hints);
  // A copy button copies the text of the element it names (the clipboard needs a secure
  // page; elsewhere the text is selected for the reader to copy).
  document.querySelectorAll("button[data-copy]").forEach(function (button) {
    button.addEventListener("click", function () {
      const el = document.getElementById(button.dataset.copy);
      if (!el) { return; }
      const done = function (word) { button.textContent = word; setTimeout(function () { button.textContent = "Copy"; }, 1500); };
      const select = function () {
        const range = document.createRange();
        range.selectNodeContents(el);
        const sel = window.getSelection();
        sel.removeAllRanges();
        sel.addRange(range);
        done("Selected: press Ctrl+C");
      };
      if (navigator.clipboard && window.isSecureContext) {
        navigator.clipboard.writeText(el.textContent).then(function () { done("Copied"); }, select);
      } else {
        select();
      }
    });
  });
  document.querySelectorAll("form.filters").forEach(function (form) {
    form.addEventListener("submit", function () {
      form.querySelectorAll("select, input").forEach(function (el) { if (!el.value) { el.disabled = true; } });
    });
    form.querySelectorAll("select").forEach(function (sel) {
      sel.addEventListener("change", function () { form.requestSubmit(); });
    });
  });
})();
