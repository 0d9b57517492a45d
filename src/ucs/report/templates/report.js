// Per-query browser: renders the JSON block #ucs-data with DOM text nodes (never as HTML), filters and pages it.
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("ucs-data").textContent);
  var PAGE = 50;
  var shown = PAGE;
  var el = function (id) { return document.getElementById(id); };
  var fSeed = el("f-seed"), fMethod = el("f-method"), fCorrect = el("f-correct"), fLabel = el("f-label"),
      fSearch = el("f-search"), list = el("q-list"), count = el("q-count"), more = el("q-more");

  function option(select, value, text) {
    var o = document.createElement("option");
    o.value = value;
    o.textContent = text;
    select.appendChild(o);
  }
  data.seeds.forEach(function (s) { option(fSeed, s, s); });
  data.methods.forEach(function (m) { option(fMethod, m, m); });
  data.labels.forEach(function (l) { option(fLabel, l, l); });

  function node(tag, cls, text) {
    var n = document.createElement(tag);
    if (cls) { n.className = cls; }
    if (text !== undefined && text !== null) { n.textContent = String(text); }
    return n;
  }

  function demoText(d) {
    var item = data.items[String(d[0])];
    return item ? item[0] : "";
  }

  // the method blocks of query q that pass the method and answer filters, with the text they contain
  function blocks(seedRows, q) {
    var out = [];
    var methods = fMethod.value ? [fMethod.value] : data.methods;
    methods.forEach(function (m) {
      var row = seedRows[m] && seedRows[m][String(q)];
      if (!row) { return; }
      if (fCorrect.value !== "" && String(row[1] ? 1 : 0) !== fCorrect.value) { return; }
      out.push({method: m, pred: row[0], correct: row[1], demos: row[2]});
    });
    return out;
  }

  function matches(query, bs, needle) {
    if (!needle) { return true; }
    if (query.text.toLowerCase().indexOf(needle) >= 0) { return true; }
    return bs.some(function (b) {
      return b.demos.some(function (d) { return demoText(d).toLowerCase().indexOf(needle) >= 0; });
    });
  }

  function card(query, bs) {
    var c = node("div", "query-card");
    c.dataset.query = query.q;
    var head = node("div");
    head.appendChild(node("span", "qnum", "#" + query.q + " "));
    head.appendChild(node("span", "qtext", query.text));
    c.appendChild(head);
    c.appendChild(node("div", "gold", "gold label: " + query.gold));
    bs.forEach(function (b) {
      var blk = node("div", "method-block " + (b.correct ? "right" : "wrong"));
      blk.dataset.method = b.method;
      var line = node("div");
      line.appendChild(node("span", "mname", b.method));
      line.appendChild(node("span", "pred", "predicted: " + (b.pred === null ? "(no label matched)" : b.pred) + " "));
      line.appendChild(node("span", "verdict " + (b.correct ? "right" : "wrong"), b.correct ? "✓ right" : "✗ wrong"));
      blk.appendChild(line);
      var ol = node("ol", "demos");
      b.demos.forEach(function (d) {
        var item = data.items[String(d[0])] || ["(pool item " + d[0] + ")", "?"];
        var li = node("li", "demo" + (d[4] ? " own-label" : ""));
        li.appendChild(node("span", "dtext", item[0]));
        li.appendChild(node("span", "dlabel", " → " + item[1]));
        if (d[4]) {
          li.appendChild(node("span", "downlabel", " ● query's label"));
        }
        if (d[1] !== null) {
          li.appendChild(node("span", "dcluster", "  [cluster " + d[1] + ", size " + d[2] + "]"));
        }
        if (d[3] !== null && d[3] !== undefined) {
          li.appendChild(node("span", "dscore", "  score " + Number(d[3]).toPrecision(3)));
        }
        ol.appendChild(li);
      });
      blk.appendChild(ol);
      c.appendChild(blk);
    });
    return c;
  }

  function render() {
    var seedRows = data.rows[fSeed.value] || {};
    var needle = fSearch.value.trim().toLowerCase();
    var hits = [];
    data.queries.forEach(function (query) {
      if (fLabel.value && String(query.gold) !== fLabel.value) { return; }
      var bs = blocks(seedRows, query.q);
      if (!bs.length || !matches(query, bs, needle)) { return; }
      hits.push([query, bs]);
    });
    while (list.firstChild) { list.removeChild(list.firstChild); }
    hits.slice(0, shown).forEach(function (h) { list.appendChild(card(h[0], h[1])); });
    count.textContent = "showing " + Math.min(shown, hits.length) + " of " + hits.length + " matching queries (" +
      data.queries.length + " in all)";
    more.hidden = hits.length <= shown;
  }

  function reset() { shown = PAGE; render(); }
  [fSeed, fMethod, fCorrect, fLabel].forEach(function (s) { s.addEventListener("change", reset); });
  fSearch.addEventListener("input", reset);
  more.addEventListener("click", function () { shown += PAGE; render(); });
  render();
})();
