// kmirror console glue. Kept tiny and free of inline script so the page can
// run under a strict Content-Security-Policy (script-src 'self').
(function () {
  "use strict";
  // Every htmx request carries the CSRF token the page was rendered with;
  // plain form posts carry it in their hidden _csrf field instead.
  document.addEventListener("htmx:configRequest", function (evt) {
    var meta = document.querySelector('meta[name="csrf-token"]');
    if (meta) {
      evt.detail.headers["X-CSRF-Token"] = meta.getAttribute("content");
    }
  });
})();

// Create-task form (Smart Connect). The form works without this; this
// makes it pleasant: it remembers which fields were touched (so inline
// validation only scolds those), turns the topic textarea into "type a name,
// press Enter" chips, pre-checks the source header for bidirectional tasks,
// disables the mapping rows while rename is on, and adds mapping rows in
// place.
(function () {
  "use strict";

  function touch(form, name) {
    var t = form.querySelector("input[data-touched]");
    if (!t || !name || name.charAt(0) === "_" || t.value === "*") {
      return;
    }
    var names = t.value ? t.value.split(",") : [];
    if (names.indexOf(name) < 0) {
      names.push(name);
      t.value = names.join(",");
    }
  }

  function syncMappings(form) {
    var rename = form.querySelector("input[data-rename]");
    var box = form.querySelector("fieldset[data-mappings]");
    if (rename && box) {
      box.disabled = rename.checked;
    }
  }

  function topicChips(form, area) {
    var max = parseInt(area.getAttribute("data-max"), 10) || 20;
    var list = document.createElement("ul");
    list.className = "chips";
    list.setAttribute("data-testid", "topic-chips");
    var input = document.createElement("input");
    input.type = "text";
    // Labels come from the page, in its language.
    input.placeholder = area.dataset.labelInput || "";
    input.setAttribute("data-testid", "topic-input");
    input.setAttribute("aria-label", area.dataset.labelName || "");
    // The source side's topics, from the last validation (datalist
    // #topic-choices); any other name can still be typed.
    input.setAttribute("list", "topic-choices");
    input.autocomplete = "off";
    area.hidden = true;
    area.parentNode.insertBefore(list, area);
    area.parentNode.insertBefore(input, area);

    function names() {
      return area.value.split("\n").map(function (s) { return s.trim(); }).filter(Boolean);
    }
    function changed(ns) {
      area.value = ns.join("\n");
      render();
      touch(form, area.name);
      // Bubbles to the validation trigger like a typed change.
      area.dispatchEvent(new Event("change", { bubbles: true }));
    }
    function render() {
      list.textContent = "";
      names().forEach(function (n, i) {
        var li = document.createElement("li");
        li.setAttribute("data-testid", "topic-chip");
        li.textContent = n;
        var x = document.createElement("button");
        x.type = "button";
        x.textContent = "×";
        x.setAttribute("aria-label", (area.dataset.labelRemove || "") + " " + n);
        x.addEventListener("click", function () {
          var ns = names();
          ns.splice(i, 1);
          changed(ns);
        });
        li.appendChild(x);
        list.appendChild(li);
      });
      input.disabled = names().length >= max;
    }
    function add() {
      var v = input.value.trim();
      var ns = names();
      if (v && ns.indexOf(v) < 0 && ns.length < max) {
        ns.push(v);
        input.value = "";
        changed(ns);
      }
    }
    input.addEventListener("keydown", function (e) {
      if (e.key !== "Enter") {
        return;
      }
      e.preventDefault(); // Enter adds a topic; it must not submit the form
      add();
    });
    // Picking a topic from the list adds it at once, as Enter would:
    // browsers report a pick as a replacement, not as typing.
    input.addEventListener("input", function (e) {
      if (e.inputType && e.inputType !== "insertReplacementText") {
        return;
      }
      var list = document.getElementById("topic-choices");
      var v = input.value.trim();
      if (list && v && Array.prototype.some.call(list.options, function (o) { return o.value === v; })) {
        add();
      }
    });
    // The chip input is not a form field: its own change events must not
    // trigger validation.
    input.addEventListener("change", function (e) { e.stopPropagation(); });
    render();
  }

  // effectiveTasks shows "2 × 2 = 4 tasks" for bidirectional as the
  // count or direction changes; the server renders the same on a reload.
  function effectiveTasks(form) {
    var out = form.querySelector("[data-tasks-effective]");
    var count = form.querySelector('input[name="rules.tasks"]');
    var dir = form.querySelector('input[name="rules.direction"]:checked');
    if (!out || !count) {
      return;
    }
    var raw = count.value.trim();
    var n = raw === "" ? 2 : Number(raw);
    if (!dir || dir.value !== "bidirectional" || !Number.isInteger(n) || n < 1) {
      out.hidden = true;
      return;
    }
    out.textContent = out.getAttribute("data-format").replace("{n}", n).replace("{total}", n * 2);
    out.hidden = false;
  }

  function init(form) {
    var area = form.querySelector("textarea[data-topic-list]");
    if (area) {
      topicChips(form, area);
    }
    syncMappings(form);
    effectiveTasks(form);
    form.addEventListener("input", function (e) {
      if (e.target.name === "rules.tasks") {
        effectiveTasks(form);
      }
    });
    // Capture phase: the field is marked touched before htmx, listening
    // on an ancestor, sends the form to be validated.
    form.addEventListener("change", function (e) {
      var el = e.target;
      touch(form, el.name);
      if (el.name === "rules.direction" && el.value === "bidirectional") {
        var h = form.querySelector("input[data-source-header]");
        if (h && !h.checked) {
          h.checked = true;
          touch(form, h.name);
        }
      }
      if (el.hasAttribute && el.hasAttribute("data-rename")) {
        syncMappings(form);
      }
      if (el.name === "rules.direction" || el.name === "rules.tasks") {
        effectiveTasks(form);
      }
    }, true);
    form.addEventListener("focusout", function (e) { touch(form, e.target.name); });
    form.addEventListener("click", function (e) {
      var b = e.target.closest && e.target.closest("button[data-add-mapping]");
      if (!b) {
        return;
      }
      e.preventDefault(); // the server's add-a-row round trip is for no-JS
      var rows = form.querySelector("tbody[data-mapping-rows]");
      var max = parseInt(b.getAttribute("data-max"), 10) || 20;
      if (!rows || rows.children.length >= max) {
        return;
      }
      var row = rows.lastElementChild.cloneNode(true);
      row.querySelectorAll("input").forEach(function (i) { i.value = ""; });
      // The new row's message slot gets its index, as the server names it.
      var index = rows.children.length;
      row.querySelectorAll(".errors").forEach(function (d) { d.textContent = ""; d.id = "err-rules-topic_mappings-" + index; });
      rows.appendChild(row);
      b.disabled = rows.children.length >= max;
    });
  }

  document.addEventListener("DOMContentLoaded", function () {
    var form = document.getElementById("task-form");
    if (form) {
      init(form);
    }
  });
})();

// Task page charts: per flow, records/s and lag (records) over the last
// minutes, drawn with the vendored uPlot. The page embeds the first data
// (a JSON script element); then the charts poll the task's series.json.
(function () {
  "use strict";
  function start() {
    if (typeof uPlot === "undefined") { return; }
    document.querySelectorAll("[data-chart-src]").forEach(function (box) {
      var charts = {}; // flow -> {el, plot}
      var every = 5000;
      var timer = null;
      function opts(width) {
        return {
          width: width, height: 200,
          scales: { x: { time: true }, rate: { auto: true }, lag: { auto: true } },
          series: [
            {},
            { label: box.dataset.labelRate, scale: "rate", stroke: "#1f6feb", width: 2, spanGaps: false },
            { label: box.dataset.labelLag, scale: "lag", stroke: "#c62828", width: 2 }
          ],
          axes: [
            {},
            { scale: "rate", label: box.dataset.labelRate },
            { scale: "lag", label: box.dataset.labelLag, side: 1, grid: { show: false } }
          ]
        };
      }
      function draw(data) {
        if (data.every_seconds) { every = Math.max(1000, data.every_seconds * 1000); }
        var flows = data.flows || [];
        var seen = {};
        flows.forEach(function (f) {
          seen[f.flow] = true;
          var cols = [f.t, f.records_per_sec, f.lag_records];
          var c = charts[f.flow];
          if (!c) {
            var el = document.createElement("div");
            el.className = "chart";
            el.setAttribute("data-testid", "chart");
            el.setAttribute("data-flow", f.flow);
            var h = document.createElement("h3");
            h.textContent = f.flow;
            el.appendChild(h);
            box.appendChild(el);
            c = charts[f.flow] = { el: el, plot: new uPlot(opts(box.clientWidth || 600), cols, el) };
          } else {
            c.plot.setData(cols);
          }
        });
        Object.keys(charts).forEach(function (k) {
          if (!seen[k]) { charts[k].plot.destroy(); charts[k].el.remove(); delete charts[k]; }
        });
        var empty = box.querySelector(".chart-empty");
        if (flows.length === 0 && !empty) {
          empty = document.createElement("p");
          empty.className = "hint chart-empty";
          empty.textContent = box.dataset.labelEmpty;
          box.appendChild(empty);
        } else if (flows.length > 0 && empty) {
          empty.remove();
        }
      }
      function poll() {
        timer = setTimeout(function () {
          if (document.hidden) { poll(); return; }
          fetch(box.dataset.chartSrc, { headers: { Accept: "application/json" } }).then(function (r) {
            if (r.status === 404) { return null; } // the task was deleted: stop
            if (!r.ok) { throw new Error("HTTP " + r.status); }
            return r.json();
          }).then(function (data) {
            if (data) { draw(data); poll(); }
          }).catch(function () { poll(); });
        }, every);
      }
      var initial = document.getElementById(box.dataset.chartData);
      draw(initial ? JSON.parse(initial.textContent) : { flows: [] });
      poll();
      window.addEventListener("resize", function () {
        Object.keys(charts).forEach(function (k) {
          charts[k].plot.setSize({ width: box.clientWidth || 600, height: 200 });
        });
      });
    });
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", start);
  } else {
    start();
  }
})();
