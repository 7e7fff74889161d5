#!/usr/bin/env bash
# The HTML report (tpusim report R.json -o R.html, tpusim run --html) of the BERT layer, both
# from a report's `kernels` rows and, for a report without them, from its ops' spans.
#   HTML_PART=page (default): the page itself: the same page from run --html and from report,
#     nothing loaded from the network, every report string escaped, the roofs and the
#     utilisation lines' means derived here from the report's config and figures, located
#     errors for bad input.
#   HTML_PART=browser: the pages in headless Chromium (Debian's chromium; installed when
#     missing and this runs as root): no script or console errors, the report's step time and
#     top kernel shown, the kernel table sorted by a header click and by #sort=KEY. Exit 77
#     (ctest: skipped), saying why, only where no browser can be installed.
# Usage: html_report.sh path/to/tpusim (from the source root).
set -u
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
part=${HTML_PART:-page}

# A browser first, so that a skip happens before any work.
browser=""
if [ "$part" = browser ]; then
    for b in chromium chromium-browser google-chrome; do
        if command -v "$b" >/dev/null 2>&1; then browser=$(command -v "$b") && break; fi
    done
    if [ -z "$browser" ] && [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
        echo "installing chromium (Debian) for the browser test"
        export DEBIAN_FRONTEND=noninteractive
        timeout 900 apt-get update -qq >/dev/null 2>&1
        timeout 900 apt-get install -y -qq --no-install-recommends chromium >/dev/null 2>&1
        command -v chromium >/dev/null 2>&1 && browser=$(command -v chromium)
    fi
    if [ -z "$browser" ]; then
        echo "SKIP: no chromium here and none could be installed (not root, or apt-get failed):" \
            "scripts/setup.sh installs it"
        exit 77
    fi
fi

v3=configs/tpu_v3_8.json
t=traces/bert_base_layer_fwd.json
"$bin" run -q --config $v3 --trace $t --report "$tmp/R.json" --timeline "$tmp/T.json" \
    --html "$tmp/run.html" >/dev/null || fatal "tpusim run --html exited with $?"

# The two reports the page is made from: with kernel rows and without (an older report). Until
# run reports carry `kernels`, the rows are made here from the ops by the schema (each root op
# and the ops fused into it; self times that sum to the run), to exercise that path.
python3 - "$tmp" <<'PY' || fatal "could not prepare the reports"
import json, sys
d = sys.argv[1]
r = json.load(open(f"{d}/R.json"))
spans = dict(r)
spans.pop("kernels", None)
spans.pop("kernel_attribution", None)
json.dump(spans, open(f"{d}/RS.json", "w"))
if "kernels" not in r:
    into = {o["id"]: o["bottleneck"][11:] for o in r["ops"] if o["bottleneck"].startswith("fused into ")}
    def root(i):
        while i in into:
            i = into[i]
        return i
    ops = {o["id"]: o for o in r["ops"]}
    groups = {}
    for o in r["ops"]:
        g = groups.setdefault(root(o["id"]), [])
        g.append(o)
    total = sum(max(o["end_cycle"] for o in g) - min(o["start_cycle"] for o in g) for g in groups.values())
    ks, left = [], r["cycles"]
    for n, (name, g) in enumerate(groups.items()):
        s, e = min(o["start_cycle"] for o in g), max(o["end_cycle"] for o in g)
        c = left if n == len(groups) - 1 else (e - s) * r["cycles"] // total
        left -= c
        busy = {u: sum(o["unit_busy_cycles"][u] for o in g) for u in g[0]["unit_busy_cycles"]}
        flops, hbm = sum(o["flops"] for o in g), sum(o["hbm_bytes"] for o in g)
        mhz = r["config"]["chip"]["clock_mhz"]
        ks.append({"name": name, "members": [name] + [o["id"] for o in g if o["id"] != name],
                   "kind": ops[name]["kind"], "self_cycles": c, "self_us": c / mhz,
                   "share": c / r["cycles"], "trips": ops[name]["trips"],
                   "self_cycles_per_trip": c / ops[name]["trips"], "span_cycles": e - s,
                   "start_cycle": s, "end_cycle": e, "unit_busy_cycles": busy, "flops": flops,
                   "hbm_bytes": hbm, "tflops": flops / (c / mhz * 1e-6) / 1e12 if c else 0,
                   "bound": ops[name]["bottleneck"]})
    ks.sort(key=lambda k: -k["self_cycles"])
    r["kernels"] = ks
    r["kernel_attribution"] = {"method": "critical path", "core": 0, "run_cycles": r["cycles"],
                               "sum_cycles": r["cycles"]}
json.dump(r, open(f"{d}/RK.json", "w"))
PY
"$bin" report "$tmp/RK.json" -o "$tmp/rk.html" --timeline "$tmp/T.json" || fatal "report RK: $?"
"$bin" report "$tmp/RS.json" -o "$tmp/rs.html" || fatal "report RS: $?"
if [ "$part" = page ]; then
    # Eight cores (SPMD), from spans: the roofline's points per core.
    "$bin" run -q --config $v3 --trace traces/data_parallel_step.json --report "$tmp/DP.json" \
        --html "$tmp/dp.html" >/dev/null || fatal "data-parallel run --html: $?"
fi

# What the page should show, derived from a report: the step time as the summary prints it, the
# rows' names largest first, the per-core roofs, the utilisation means.
cat > "$tmp/expect.py" <<'PY'
import json, sys
def expect(path):
    r = json.load(open(path))
    c = r["config"]
    hz = c["chip"]["clock_mhz"] * 1e6
    e = {"time": f"{r['cycles']} cycles = {r['seconds'] * 1e3:.6f} ms",
         "mxu_roof": c["core"]["mxus"] * c["mxu"]["rows"] * c["mxu"]["cols"] * 2 * hz,
         "vpu_roof": c["vpu"]["sublanes"] * c["vpu"]["lanes"] * c["vpu"]["valu_slots"] * hz,
         "hbm_roof": r["hbm"]["peak_gbps_per_chip"] * 1e9 / c["chip"]["cores_per_chip"],
         "means": {"MXU": r["utilization"]["mxu_busy"], "VPU": r["utilization"]["vpu_busy"],
                   "HBM": r["utilization"]["hbm_bandwidth"]}}
    if "kernels" in r:
        rows = [(k["name"], k["self_cycles"], k["flops"], k["hbm_bytes"]) for k in r["kernels"]]
        e["source"] = "kernels"
    else:
        into = {o["id"]: o["bottleneck"][11:] for o in r["ops"]
                if o["bottleneck"].startswith("fused into ")}
        def root(i):
            while i in into:
                i = into[i]
            return i
        g = {}
        for o in r["ops"]:
            x = g.setdefault(root(o["id"]), [o["start_cycle"], o["end_cycle"], 0, 0])
            x[0], x[1] = min(x[0], o["start_cycle"]), max(x[1], o["end_cycle"])
            x[2] += o["flops"]
            x[3] += o["hbm_bytes"]
        rows = [(n, x[1] - x[0], x[2], x[3]) for n, x in g.items()]
        e["source"] = "spans"
    rows.sort(key=lambda x: -x[1])
    # The table's rates: TFLOPS of all cores, HBM GB/s per chip (the summary's denominator).
    e["rates"] = {n: (f / (t / hz) / 1e12 if t else 0, b / r["chips"] / (t / hz) / 1e9 if t else 0)
                  for n, t, f, b in rows}
    # Per core: the report's FLOPs are the program's cores' together.
    e["pts"] = {n: (f / b, f / r["cores"] / (t / hz)) for n, t, f, b in rows if t > 0 and f > 0 and b > 0}
    e["names"] = [x[0] for x in rows]
    e["times"] = [x[1] for x in rows]
    e["points"] = sum(1 for x in rows if x[1] > 0 and x[2] > 0 and x[3] > 0)
    return e
PY

# The rows of a page's (or a dumped DOM's) kernel table, and its attributes, read with the
# standard library's HTML parser (as the browser's serialisation writes them back).
cat > "$tmp/page.py" <<'PY'
from html.parser import HTMLParser
class Page(HTMLParser):
    def __init__(self, text):
        super().__init__()
        self.attrs, self.rows, self.text = {}, [], []
        self._in_body = self._cell = False
        self._tbl = False
        self.feed(text)
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if "id" in a:
            self.attrs[a["id"]] = a
        if tag == "body":
            self.attrs["body"] = a
        if tag == "table" and a.get("id") == "kernel-table":
            self._tbl = True
        if self._tbl and tag == "tbody":
            self._in_body = True
        if self._in_body and tag == "tr":
            self.rows.append([])
        if self._tbl and tag == "th":
            self.keys = getattr(self, "keys", []) + [a.get("data-key")]
        if self._in_body and tag == "td":
            self.rows[-1].append(a.get("data-v"))
        if tag == "circle" and "data-kernel" in a:
            self.points = getattr(self, "points", {})
            self.points[a["data-kernel"]] = (float(a["data-x"]), float(a["data-y"]))
        if tag == "polyline" and "data-unit" in a:
            self.attrs["unit-" + a["data-unit"]] = a
    def handle_endtag(self, tag):
        if tag == "tbody":
            self._in_body = False
        if tag == "table":
            self._tbl = False
    def handle_data(self, data):
        self.text.append(data)
    def alltext(self):
        return " ".join(" ".join(self.text).split())
PY

if [ "$part" = page ]; then
    # The same page from run --html and from report (same report, same timeline).
    "$bin" report "$tmp/R.json" -o "$tmp/r.html" --timeline "$tmp/T.json" || fail "report R: $?"
    cmp -s "$tmp/run.html" "$tmp/r.html" && passes=$((passes + 1)) ||
        fail "run --html and report wrote different pages"
    for page in rk rs; do
        f="$tmp/$page.html"
        # Self-contained: no element loads anything (no src, no stylesheet link, no CSS url or
        # import); the only web address is the Perfetto link, an <a> the reader may follow.
        loads=$(grep -Eio '<(script|img|iframe|link|object|embed|source|video|audio|image|use)[^>]*(src|href)=[^>]*>|url\(|@import' "$f")
        links=$(grep -Eo 'https?://[^"<> ]*' "$f" | sort -u | tr '\n' ' ')
        anchors=$(grep -Eo '<a href="https?://[^"]*"' "$f" | wc -l)
        all=$(grep -Eo 'https?://' "$f" | wc -l)
        if [ -n "$loads" ] || [ "$links" != "https://ui.perfetto.dev " ] || [ "$anchors" != "$all" ]; then
            fail "$page: loads [$loads], addresses [$links], $anchors of $all in links"
        else
            passes=$((passes + 1))
        fi
    done
    grep -q "pick <code id=\"timeline-file\">$tmp/T.json</code>" "$tmp/rk.html" &&
        grep -q "This page names none" "$tmp/rs.html" && passes=$((passes + 1)) ||
        fail "the Perfetto instructions do not name the timeline given (or name one not given)"
    # The figures in the page, against the reports.
    if python3 - "$tmp" <<'PY'
import json, sys
d = sys.argv[1]
sys.path.insert(0, d)
from expect import expect
from page import Page
errors = []
for name, rep in (("rk", "RK"), ("rs", "RS"), ("dp", "DP")):
    e = expect(f"{d}/{rep}.json")
    p = Page(open(f"{d}/{name}.html").read())
    t = p.attrs["kernel-table"]
    if t.get("data-source") != e["source"]:
        errors.append(f"{name}: rows from {t.get('data-source')}, want {e['source']}")
    got = [r[0] for r in p.rows]
    if got != e["names"]:
        errors.append(f"{name}: rows {got} != {e['names']}")
    if e["time"] not in p.alltext():
        errors.append(f"{name}: no '{e['time']}'")
    if e["source"] == "spans" and "timed by spans" not in p.alltext():
        errors.append(f"{name}: the fallback does not say its times are spans")
    for row in p.rows:
        cell = dict(zip(p.keys, row))
        tf, gb = e["rates"][cell["name"]]
        if abs(float(cell["tflops"]) - tf) > 1e-9 * tf or abs(float(cell["gbps"]) - gb) > 1e-9 * gb:
            errors.append(f"{name}: {cell['name']} {cell['tflops']} TFLOPS, {cell['gbps']} GB/s per chip; want {tf}, {gb}")
    svg = p.attrs["roofline-svg"]
    for k in ("mxu_roof", "vpu_roof", "hbm_roof"):
        got = float(svg["data-" + k.replace("_", "-")])
        if abs(got - e[k]) > 1e-9 * e[k]:
            errors.append(f"{name}: {k} {got} != {e[k]}")
    if int(svg["data-points"]) != e["points"] or set(getattr(p, "points", {})) != set(e["pts"]):
        errors.append(f"{name}: {svg['data-points']} points, want {e['points']}")
    for k, (x, y) in getattr(p, "points", {}).items():
        wx, wy = e["pts"].get(k, (0, 0))
        if abs(x - wx) > 1e-9 * wx or abs(y - wy) > 1e-9 * wy:
            errors.append(f"{name}: {k} at ({x}, {y}), want ({wx}, {wy})")
        # Over its span no kernel outruns one core's MXU and VPU together.
        if e["source"] == "spans" and y > e["mxu_roof"] + e["vpu_roof"]:
            errors.append(f"{name}: {k} at {y / 1e12} TFLOPS per core, above the roofs")
    for unit, want in e["means"].items():
        got = float(p.attrs["unit-" + unit]["data-mean"])
        if abs(got - want) > 1e-6:
            errors.append(f"{name}: {unit} line's mean {got} != the report's {want}")
if errors:
    print("FAIL page figures: " + "; ".join(errors))
    sys.exit(1)
print(f"ok   page figures: step {e['time']}, top kernel {e['names'][0]}")
PY
    then passes=$((passes + 1)); else fails=$((fails + 1)); fi

    # Every string from the report is escaped: an op renamed to markup shows as text, in the
    # table, the roofline's titles and the config, on both paths.
    evil='l0.<img src=x onerror=alert(1)>&amp;"'
    python3 - "$tmp" "$evil" <<'PY' || fail "could not write the renamed reports"
import json, sys
d, evil = sys.argv[1], sys.argv[2]
for rep in ("RK", "RS"):
    text = open(f"{d}/{rep}.json").read().replace("l0.attn.scores", evil.replace('"', ""))
    r = json.loads(text)
    r["config"]["description"] = evil
    json.dump(r, open(f"{d}/{rep}_evil.json", "w"))
PY
    for rep in RK RS; do
        "$bin" report "$tmp/${rep}_evil.json" -o "$tmp/evil.html" || fail "report ${rep}_evil: $?"
        if grep -q '<img' "$tmp/evil.html" || grep -q 'onerror=alert(1)>' "$tmp/evil.html" ||
            ! grep -q 'l0\.&lt;img src=x onerror=alert(1)&gt;&amp;amp;' "$tmp/evil.html" ||
            ! grep -q '&amp;amp;&quot;' "$tmp/evil.html"; then
            fail "$rep: a string from the report is not escaped"
        else
            passes=$((passes + 1))
        fi
    done

    # Bad input: one located error line, exit 2.
    echo '{"command": "run",' >"$tmp/bad.json"
    python3 -c "
import json, sys
r = json.load(open('$tmp/RS.json'))
del r['ops']
json.dump(r, open('$tmp/no_ops.json', 'w'))
r = json.load(open('$tmp/RS.json'))
r['ops'][3]['start_cycle'] = 'soon'
json.dump(r, open('$tmp/bad_op.json', 'w'))
r = json.load(open('$tmp/RK.json'))
del r['kernels'][1]['self_cycles']
json.dump(r, open('$tmp/bad_kernel.json', 'w'))
r = json.load(open('$tmp/RS.json'))
del r['config']['vpu']['valu_slots']
json.dump(r, open('$tmp/no_slots.json', 'w'))
"
    expect_error "missing report" "$tmp/none.json: cannot open file" -- \
        report "$tmp/none.json" -o "$tmp/x.html"
    expect_error "malformed report" "$tmp/bad.json: line 2" -- report "$tmp/bad.json" -o "$tmp/x.html"
    expect_error "report without ops" "$tmp/no_ops.json: /ops: missing" -- \
        report "$tmp/no_ops.json" -o "$tmp/x.html"
    expect_error "a config, not a report" "$v3: not a tpusim run report" -- report $v3 -o "$tmp/x.html"
    expect_error "an op's start not a number" "$tmp/bad_op.json: /ops/3/start_cycle: expected a number" -- \
        report "$tmp/bad_op.json" -o "$tmp/x.html"
    expect_error "a kernel without self time" "$tmp/bad_kernel.json: /kernels/1/self_cycles: missing" -- \
        report "$tmp/bad_kernel.json" -o "$tmp/x.html"
    expect_error "a roof's key missing" "$tmp/no_slots.json: /config/vpu/valu_slots: missing" -- \
        report "$tmp/no_slots.json" -o "$tmp/x.html"
    expect_error "missing timeline" "$tmp/none.trace.json: no such timeline file" -- \
        report "$tmp/RS.json" -o "$tmp/x.html" --timeline "$tmp/none.trace.json"
    expect_error "no output folder" "$tmp/nodir/x.html: cannot write" -- \
        report "$tmp/RS.json" -o "$tmp/nodir/x.html"
    expect_error "run --html into no folder" "cannot write the HTML report: no directory $tmp/nodir" -- \
        run -q --config $v3 --trace $t --html "$tmp/nodir/x.html"
    [ ! -e "$tmp/x.html" ] && passes=$((passes + 1)) || fail "a failed report left a page"
    finish
    exit
fi

# HTML_PART=browser. chromium DUMP URL: the DOM after the page's scripts ran; its log (console
# messages, uncaught errors) in $tmp/log. A fresh profile each time; a timeout against hangs.
dump() {
    timeout 60 "$browser" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage \
        --no-first-run --user-data-dir="$tmp/profile" --enable-logging=stderr --v=0 \
        --dump-dom "$2" >"$1" 2>"$tmp/log"
    local rc=$?
    rm -rf "$tmp/profile"
    if [ "$rc" -ne 0 ]; then
        fail "chromium on $2 exited with $rc: $(tail -3 "$tmp/log")"
        return 1
    fi
    # Anything the page wrote to the console, or threw, is an error here: it writes nothing.
    if grep -E 'CONSOLE|Uncaught' "$tmp/log" >"$tmp/console"; then
        fail "console on $2: $(head -5 "$tmp/console")"
        return 1
    fi
    return 0
}
# A copy of the page with a script, run after the page's own, that clicks headers as a reader
# would and records the table's order before and after in body's data-test: PAGE KEY OUT.
clicks() {
    cat >"$tmp/clicks.js" <<JS
(function () {
  var t = document.getElementById('kernel-table');
  function snap() {
    return {sorted: t.getAttribute('data-sorted'),
            rows: Array.prototype.map.call(t.tBodies[0].rows, function (r) { return r.cells[0].getAttribute('data-v'); })};
  }
  function click(k) { document.querySelector('#kernel-table th[data-key=' + k + ']').click(); }
  var out = {initial: snap()};
  click('name'); out.name1 = snap(); click('name'); out.name2 = snap();
  click('$2'); click('$2'); out.key2 = snap();
  document.body.setAttribute('data-test', JSON.stringify(out));
})();
JS
    python3 -c "
import sys
page, js, out = sys.argv[1:]
text = open(page).read()
open(out, 'w').write(text.replace('</body>', '<script>' + open(js).read() + '</script></body>'))
" "$1" "$tmp/clicks.js" "$3"
}
for page in rk rs; do
    rep=$([ $page = rk ] && echo RK || echo RS)
    key=$([ $page = rk ] && echo self_us || echo span_us)
    clicks "$tmp/$page.html" $key "$tmp/${page}_clicks.html"
    dump "$tmp/$page.clicks.dom" "file://$tmp/${page}_clicks.html" &&
        dump "$tmp/$page.hash.dom" "file://$tmp/$page.html#sort=$key:asc" || continue
    if python3 - "$tmp" "$page" "$rep" "$key" <<'PY'
import json, sys
d, page, rep, key = sys.argv[1:]
sys.path.insert(0, d)
from expect import expect
from page import Page
e = expect(f"{d}/{rep}.json")
errors = []
def load(suffix):
    p = Page(open(f"{d}/{page}.{suffix}.dom").read())
    if p.attrs.get("body", {}).get("data-ready") != "1":
        errors.append(f"{suffix}: the page's script did not finish (data-ready)")
    if p.attrs.get("js-errors", {}).get("data-count") != "0":
        errors.append(f"{suffix}: script errors: {p.attrs.get('js-errors')}")
    return p
p = load("clicks")
if e["time"] not in p.alltext():
    errors.append(f"the step time '{e['time']}' is not shown")
if e["names"][0] not in p.alltext():
    errors.append(f"the top kernel {e['names'][0]} is not shown")
# Ascending time: a stable sort of the rows as they stood (largest first), as the page's is.
by_time = [n for n, _ in sorted(zip(e["names"], e["times"]), key=lambda x: x[1])]
test = json.loads(p.attrs["body"].get("data-test", "{}"))
h = load("hash")
test["hash"] = {"sorted": h.attrs["kernel-table"].get("data-sorted"), "rows": [r[0] for r in h.rows]}
for state, want_key, want in (("initial", f"{key}:desc", e["names"]),
                              ("name1", "name:asc", sorted(e["names"])),
                              ("name2", "name:desc", sorted(e["names"], reverse=True)),
                              ("key2", f"{key}:asc", by_time),
                              ("hash", f"{key}:asc", by_time)):
    got = test.get(state, {})
    if got.get("sorted") != want_key or got.get("rows") != want:
        errors.append(f"{state}: sorted {got.get('sorted')}, rows {got.get('rows')}, want {want_key} {want}")
if errors:
    print(f"FAIL {page} in chromium: " + "; ".join(errors))
    sys.exit(1)
print(f"ok   {page} in chromium: {e['time']}, top kernel {e['names'][0]}, sorted by header clicks and #sort")
PY
    then passes=$((passes + 1)); else fails=$((fails + 1)); fi
done
# The page's error trap works: a page that throws is caught by it (and by the console check).
sed 's|</body>|<script>no_such_function();</script></body>|' "$tmp/rk.html" >"$tmp/throws.html"
timeout 60 "$browser" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --no-first-run \
    --user-data-dir="$tmp/profile" --enable-logging=stderr --v=0 --dump-dom \
    "file://$tmp/throws.html" >"$tmp/throws.dom" 2>"$tmp/log"
grep -q 'data-count="1"' "$tmp/throws.dom" && grep -q 'Uncaught' "$tmp/log" &&
    passes=$((passes + 1)) || fail "a script error on the page went unnoticed"
finish
