"""``--llmjudge-report=html:PATH``: one self-contained HTML file that people read.

Rendered from the report document (``report/model.py``); no network is needed to view it:
the stylesheet and the one small script are inline, every chart is inline SVG drawn in
Python (``report/charts.py``), nothing is fetched. Sections, each only when the run has
data for it:

1. header: verdict, totals, run metadata (judge models, rubric hash, plugin version,
   seeds, pytest arguments) and the judge-call accounting with the estimated cost;
2. summary: the terminal table per suite (language x metric rows, failing rows marked);
3. scores by language: per suite and metric a bar per language (mean with its 95% CI, or
   the case pass rate for categorical metrics) against its threshold tick;
4. judge-human agreement (gate records): per metric the judge's weighted F1 per language
   with its CI beside the human ceiling, the table of agreement statistics, the confusion
   matrices (rows human aggregate, columns judge) and the class distributions per
   agreement level (where the judge's high-score bias shows);
5. regression against the baseline: mean differences with CIs per language (forest plots);
6. rankings: Bradley-Terry strengths with CIs;
7. cases: failed aggregates, then every case (passing ones too) in a browser the page's
   script draws from one embedded JSON block (``<script type="application/json"
   id="case-data">``): search over case, input, output, reference and judge text; filters
   by suite, language, metric, status (``pass``, ``fail``, ``unscored``, ...) and, with a
   baseline, by what changed; sortable columns; a row opens the case in full (input,
   output, reference, justification, reason, raw reply, baseline score and output). The
   URL fragment sets the same: ``report.html#q=word&lang=ja&metric=...&suite=...&status=fail&sort=-v``,
   and ``#case=<node id>`` shows one case alone;
8. items that did not run (skips, invalid suites) and results of kinds this version does
   not know (a generic table).

Size: text shared by several records (a case's input, output and reference under each of
its metrics; suite, language, metric names) is stored once in a string table; the table
draws :data:`PAGE_ROWS` rows at a time and cuts justifications to
:data:`JUSTIFICATION_CHARS` characters (the case view shows them whole); at most
:data:`MAX_CASE_ROWS` cases are embedded (the page says when it cut; the JSON report keeps
everything). The embedded JSON holds no raw ``<``, ``>``, ``&`` or control character:
text is control-escaped (``\\x1b``) before encoding. 10,000 cases with their texts make a
page of about 7 MB that Chromium draws in well under a second (``benchmarks/report_speed.py
--browser``, numbers in docs/reports.md).
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from html import escape
from pathlib import Path
from typing import Any

from pytest_llmjudge.atomic import write_atomic
from pytest_llmjudge.escaping import MULTILINE, escape_controls
from pytest_llmjudge.report import charts
from pytest_llmjudge.report.model import (
    ALL,
    NOT_DECIDED,
    format_number,
    gate_threshold,
    interval,
    is_failure,
    number,
    record_group,
    regression_status,
    skew_value,
    threshold_text,
)
from pytest_llmjudge.report.terminal import STATUS_TEXT, accounting_line, every_case_unscored, ranking_entries

JUSTIFICATION_CHARS = 400
MAX_CASE_ROWS = 50_000
PAGE_ROWS = 200
MAX_OTHER_ROWS = 500
LEVEL_ORDER = ("all", "full", "partial", "none", "single")

CSS = """
:root{--pass:#2e7d32;--fail:#c62828;--warn:#ef8f00;--ceil:#9e9e9e;--neutral:#1565c0;--ink:#1d1d1f;--muted:#666}
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Noto Sans",sans-serif;color:var(--ink);
margin:0 auto;max-width:1200px;padding:16px 24px 48px}
h1{font-size:22px;margin:8px 0}h2{font-size:18px;margin:28px 0 8px;border-bottom:1px solid #ddd;padding-bottom:4px}
h3{font-size:15px;margin:18px 0 6px}h4{font-size:13px;margin:12px 0 4px}
.badge{display:inline-block;padding:2px 10px;border-radius:10px;color:#fff;font-weight:600;margin-left:8px;font-size:13px}
.badge.pass{background:var(--pass)}.badge.fail{background:var(--fail)}
dl.meta{display:grid;grid-template-columns:max-content 1fr;gap:2px 14px;margin:8px 0}
dl.meta dt{color:var(--muted)}dl.meta dd{margin:0;word-break:break-word}
nav a{margin-right:14px}
table{border-collapse:collapse;margin:6px 0 12px;font-size:13px}
th,td{border-bottom:1px solid #e4e4e4;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f6f6f6;position:sticky;top:0}
td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
tr.warn td{background:#fff4e0}tr.fail td{background:#fdecea}tr.fail td.res{color:var(--fail);font-weight:600}
table.overview td{min-width:56px}table.overview td.ok{background:#e8f5e9}
table.overview td.warn{background:#fff4e0}table.overview td.fail{background:#fdecea;color:var(--fail);font-weight:600}table.overview tbody th{text-align:left}
td.res{white-space:nowrap}
.charts{display:flex;flex-wrap:wrap;gap:14px 22px;align-items:flex-start}
figure{margin:0}figcaption{font-size:12px;color:var(--muted);max-width:560px}
svg.chart{max-width:100%;height:auto;font-family:inherit}
svg .title{font-size:13px;font-weight:600;fill:var(--ink)}
svg .axis{font-size:11px;fill:var(--ink)}svg .tick{font-size:10px;fill:var(--muted)}
svg .muted{font-size:12px;fill:var(--muted)}svg .cell{font-size:11px}
svg .grid{stroke:#eee}svg .axisline{stroke:#888;stroke-width:1}
svg .warn{fill:var(--warn)}svg .pass{fill:var(--pass)}svg .fail{fill:var(--fail)}svg .ceil{fill:var(--ceil)}svg .neutral{fill:var(--neutral)}
svg .whisker{stroke:#222;stroke-width:1.2;fill:none}svg .marker{stroke:#111;stroke-width:2.5;fill:none}
svg .dashed{stroke-dasharray:4 3;stroke-width:1.5}
svg .c0{fill:#c6dbef}svg .c1{fill:#9ecae1}svg .c2{fill:#6baed6}svg .c3{fill:#4292c6}svg .c4{fill:#2171b5}
svg .c5{fill:#08306b}
.legend span{display:inline-block;margin-right:14px;font-size:12px;color:var(--muted)}
.legend i{display:inline-block;width:10px;height:10px;margin-right:4px;vertical-align:-1px}
.filters{display:flex;flex-wrap:wrap;gap:8px;align-items:center;margin:8px 0}
.filters input{min-width:260px;padding:4px 6px}.filters select{padding:3px}
td.why{max-width:560px;white-space:pre-wrap;word-break:break-word}
.muted{color:var(--muted)}details{margin:6px 0}code{font-size:12px}
tr.unscored td,tr.error td{background:#fdecea}tr.unscored td.res,tr.error td.res{color:var(--fail);font-weight:600}
th.sortable{cursor:pointer}th[aria-sort=ascending]::after{content:" \\25B2"}th[aria-sort=descending]::after{content:" \\25BC"}
#case-table tbody tr{cursor:pointer}#case-table tbody tr:hover td{background:#eef4fb}
#case-detail{border:1px solid #ccc;border-radius:6px;padding:8px 14px;margin:10px 0;background:#fafafa}
#case-detail h3 button{margin-left:12px;font-size:12px}
body.one-case>header,body.one-case>nav,body.one-case>section:not(#cases),body.one-case>footer,
body.one-case #cases>:not(#case-detail){display:none}
dd.full{white-space:pre-wrap;word-break:break-word;max-height:24em;overflow:auto}
"""

SCRIPT = """
(function(){
  var data=document.getElementById('case-data'),table=document.getElementById('case-table');
  if(data&&table){
    var packed=JSON.parse(data.textContent),T=packed.strings,cases=packed.cases,body=table.tBodies[0],
        PAGE=%(page)d,limit=PAGE;
    cases.forEach(function(c){['s','l','m','t','input','output','reference','judge','bout'].forEach(function(k){
      if(typeof c[k]==='number'){c[k]=T[c[k]];}});
      if(c.w==null){c.w=c.reason!=null?'unscored: '+c.reason+(c.raw!=null?'; raw reply: '+c.raw:''):c.justification;}});
    var texts=cases.map(function(c){return [c.s,c.c,c.l,c.m,c.st,c.sc,c.w,c.input,c.output,c.reference,c.raw,c.id]
      .join('\\n').toLowerCase();});
    var q=document.getElementById('f-q'),fs=document.getElementById('f-suite'),fl=document.getElementById('f-lang'),
        fm=document.getElementById('f-metric'),ft=document.getElementById('f-status'),
        fc=document.getElementById('f-change')||{value:'',addEventListener:function(){}},
        out=document.getElementById('f-count'),more=document.getElementById('case-more'),
        detail=document.getElementById('case-detail'),sortKey=null,sortDir=1,shown=[];
    var esc=function(v){return v==null?'':String(v).replace(/&/g,'&amp;').replace(/</g,'&lt;')
      .replace(/>/g,'&gt;').replace(/"/g,'&quot;');};
    var cut=function(v,n){v=v==null?'':String(v);return v.length>n?v.slice(0,n)+' \\u2026':v;};
    var cmp=function(a,b){var x=cases[a][sortKey],y=cases[b][sortKey];
      if(x==null&&y==null){return a-b;} if(x==null){return 1;} if(y==null){return -1;}
      return (x<y?-1:x>y?1:a-b)*sortDir;};
    var show=function(i){
      var c=cases[i],rows=[['suite',c.s],['case',c.c],['item',c.id],['language',c.l],['metric',c.m],
        ['status',c.st],['score',c.sc],['threshold',c.t],['judge',c.judge],['input',c.input],['output',c.output],
        ['reference',c.reference],['justification',c.justification],['reason',c.reason],['raw reply',c.raw],
        ['vs baseline',c.ch],['baseline score',c.bsc],['baseline output',c.bout]];
      detail.innerHTML='<h3>'+esc(c.c)+' <span class="muted">['+esc(c.l)+'] '+esc(c.m)+'</span>'+
        '<button type="button" id="case-close">close</button></h3><dl class="meta case">'+
        rows.filter(function(r){return r[1]!=null&&r[1]!=='';}).map(function(r){
          return '<dt>'+esc(r[0])+'</dt><dd dir="auto" class="full">'+esc(r[1])+'</dd>';}).join('')+'</dl>';
      detail.hidden=false; detail.setAttribute('data-case',c.id||c.c);
      document.getElementById('case-close').onclick=function(){detail.hidden=true;
        document.body.classList.remove('one-case');};
      detail.scrollIntoView({block:'nearest'});
    };
    var draw=function(){
      var html=[],n=Math.min(limit,shown.length);
      for(var k=0;k<n;k++){var i=shown[k],c=cases[i];
        html.push('<tr data-i="'+i+'" data-s="'+esc(c.s)+'" data-l="'+esc(c.l)+'" data-m="'+esc(c.m)+
          '" class="'+c.st+'"><td>'+esc(c.s)+'</td><td title="'+esc(c.id)+'"><a href="#case">'+esc(c.c)+'</a></td><td>'+
          esc(c.l)+'</td><td>'+esc(c.m)+'</td><td class="res">'+esc(c.st)+'</td><td class="n">'+esc(c.sc)+(c.ch&&c.bsc!==c.sc?' <span class="muted">(was '+esc(c.bsc)+')</span>':'')+
          '</td><td>'+esc(c.t)+'</td><td class="why" dir="auto">'+esc(cut(c.w,%(chars)d))+'</td></tr>');}
      body.innerHTML=html.join('');
      more.hidden=shown.length<=n; more.textContent='show '+Math.min(PAGE,shown.length-n)+' more';
      out.textContent=shown.length+' of '+cases.length+' match'+(shown.length>n?', first '+n+' shown':'');
      table.setAttribute('data-shown',String(shown.length));
    };
    var apply=function(){
      var v=q.value.trim().toLowerCase(),s=fs.value,l=fl.value,m=fm.value,t=ft.value,h=fc.value;shown=[];
      for(var i=0;i<cases.length;i++){var c=cases[i];
        if((!v||texts[i].indexOf(v)>=0)&&(!s||c.s===s)&&(!l||c.l===l)&&(!m||c.m===m)&&(!t||c.st===t)&&(!h||(c.ch||'no baseline')===h)){shown.push(i);}}
      if(sortKey){shown.sort(cmp);}
      limit=PAGE; draw();
    };
    table.tHead.addEventListener('click',function(e){var th=e.target.closest('th');if(!th){return;}
      var k=th.getAttribute('data-k');sortDir=(sortKey===k)?-sortDir:1;sortKey=k;
      Array.prototype.forEach.call(table.tHead.rows[0].cells,function(h){h.removeAttribute('aria-sort');});
      th.setAttribute('aria-sort',sortDir>0?'ascending':'descending');shown.sort(cmp);draw();});
    body.addEventListener('click',function(e){var tr=e.target.closest('tr');if(tr){e.preventDefault();
      show(+tr.getAttribute('data-i'));}});
    more.addEventListener('click',function(){limit+=PAGE;draw();});
    var hash=new URLSearchParams(location.hash.replace(/^#/,''));
    if(hash.has('q')){q.value=hash.get('q');}
    if(hash.has('suite')){fs.value=hash.get('suite');}
    if(hash.has('lang')){fl.value=hash.get('lang');}
    if(hash.has('metric')){fm.value=hash.get('metric');}
    if(hash.has('status')){ft.value=hash.get('status');}
    if(hash.has('sort')){sortKey=hash.get('sort').replace(/^-/,'');sortDir=hash.get('sort').charAt(0)==='-'?-1:1;}
    if(hash.has('change')){fc.value=hash.get('change');}
    [q,fs,fl,fm,ft,fc].forEach(function(e){e.addEventListener('input',apply);e.addEventListener('change',apply);});
    apply();
    if(hash.has('case')){var want=hash.get('case');
      // A link to one case (#case=ID) shows that case alone, in full; "close" brings the report back.
      for(var j=0;j<cases.length;j++){if(cases[j].id===want||cases[j].c===want){
        document.body.classList.add('one-case');show(j);break;}}}
  }
  var drawn=0;
  document.querySelectorAll('svg.chart').forEach(function(svg){
    var box=svg.getBoundingClientRect(); if(box.width>0&&box.height>0){drawn++;}
  });
  document.body.setAttribute('data-charts-drawn',String(drawn));
  // Milliseconds from the start of navigation to here (parse, charts, the case table): what benchmarks read.
  document.body.setAttribute('data-render-ms',String(Math.round(performance.now())));
  document.body.setAttribute('data-ready','1');
})();
"""


def _script() -> str:
    return SCRIPT.replace("%(page)d", str(PAGE_ROWS)).replace("%(chars)d", str(JUSTIFICATION_CHARS))


def _e(value: Any) -> str:
    return escape("" if value is None else str(value))


def _num(value: Any, digits: int = 2) -> str:
    return format_number(value, digits)


def _ci(low: Any, high: Any, digits: int = 2) -> str:
    if number(low) is None or number(high) is None:
        return "-"
    return f"[{format_number(low, digits)}, {format_number(high, digits)}]"


def _table(headers: Sequence[str], rows: Iterable[str], *, attrs: str = "") -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    return f"<table{attrs}><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def _cells(values: Sequence[tuple[str, str]]) -> str:
    """``(css class, already-escaped html)`` pairs as ``<td>`` cells."""
    return "".join(f'<td class="{css}">{html}</td>' if css else f"<td>{html}</td>" for css, html in values)


# -- header ----------------------------------------------------------------------------------


def _header(document: Mapping[str, Any]) -> str:
    run = document.get("run") or {}
    totals = document.get("totals") or {}
    failed = int(totals.get("failed", 0)) + int(totals.get("error", 0))
    badge = '<span class="badge fail">FAILED</span>' if failed else '<span class="badge pass">PASSED</span>'
    kinds = ("passed", "failed", "error", "skipped", "xfailed", "xpassed")
    counts = ", ".join(f"{totals.get(k, 0)} {k}" for k in kinds if totals.get(k))
    meta: list[tuple[str, str]] = [
        ("items", _e(counts or "none")),
        ("started", _e(run.get("timestamp"))),
        ("duration", _e(f"{run.get('duration_s')} s") if run.get("duration_s") is not None else "-"),
        ("live judges", _e(", ".join(run.get("judge_models") or []) or "none")),
        ("scores judged by", _e(", ".join(run.get("judge_labels") or []) or "-")),
        ("rubric hash", f"<code>{_e(run.get('rubric_hash') or '-')}</code>"),
        ("judge seeds", _e(", ".join(str(s) for s in run.get("judge_seeds") or []) or "-")),
        (
            "plugin",
            _e(
                f"pytest-llmjudge {run.get('plugin_version')}, pytest {run.get('pytest_version')}, "
                f"Python {run.get('python_version')}"
            ),
        ),
        ("pytest args", f"<code>{_e(' '.join(run.get('pytest_args') or []))}</code>"),
    ]
    line = accounting_line(document.get("accounting"))
    if line:
        meta.append(("judge calls", _e(line.removeprefix("judge calls: "))))
    accounting = document.get("accounting") or {}
    if accounting.get("cost_note") and accounting.get("estimated_cost_usd") is None:
        meta.append(("cost", _e(f"not estimated: {accounting['cost_note']}")))
    items = "".join(f"<dt>{escape(k)}</dt><dd>{v}</dd>" for k, v in meta)
    return f'<header><h1>pytest-llmjudge report{badge}</h1><dl class="meta">{items}</dl></header>'


# -- summary and score charts ----------------------------------------------------------------


def _row_threshold(row: Mapping[str, Any]) -> str:
    parts = [f"each {threshold_text(t)}" for t in (row.get("case_thresholds") or [])[:2]]
    parts += [f"{a.get('stat')} {threshold_text(a.get('threshold'))}" for a in row.get("aggregates") or []]
    return "; ".join(parts) or "-"


def _row_result(row: Mapping[str, Any]) -> str:
    return STATUS_TEXT.get(str(row.get("status")), "-")


def _shown_mean(row: Mapping[str, Any]) -> str:
    if every_case_unscored(row):
        return "n/a"
    if number(row.get("mean")) is None and number(row.get("pass_rate")) is not None:
        return f"{row['pass_rate']:.0%} pass"
    return _num(row.get("mean"))


def _overview(rows: Sequence[Mapping[str, Any]]) -> str:
    """Metric x language matrix of one suite: the value, coloured by the row's verdict."""
    languages = sorted({str(r.get("language")) for r in rows if r.get("language") != ALL})
    if any(r.get("language") == ALL for r in rows):
        languages.append(ALL)
    cells: dict[tuple[str, str], Mapping[str, Any]] = {(str(r.get("metric")), str(r.get("language"))): r for r in rows}
    metrics = sorted({str(r.get("metric")) for r in rows})
    body = []
    for metric in metrics:
        tds = [f"<th>{_e(metric)}</th>"]
        for language in languages:
            row = cells.get((metric, language))
            if row is None:
                tds.append("<td></td>")
                continue
            result = _row_result(row)
            css = {"pass": "ok", "warn": "warn", "fail": "fail", "error": "fail"}.get(str(row.get("status")), "")
            tip = (
                f"{metric} [{language}] n={row.get('n')}, unscored {row.get('n_unscored')}, "
                f"95% CI {_ci(row.get('ci_low'), row.get('ci_high'))}, {_row_threshold(row)}: {result}"
            )
            tds.append(f'<td class="n {css}" title="{_e(tip)}">{_e(_shown_mean(row))}</td>')
        body.append(f"<tr>{''.join(tds)}</tr>")
    head = "".join(f"<th>{_e(h)}</th>" for h in ["metric \\ language", *languages])
    return f'<table class="overview"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'


def _summary(rows_by_suite: Mapping[str, Sequence[Mapping[str, Any]]], with_gates: bool) -> str:
    parts = [
        '<section id="summary"><h2>Summary</h2><p class="muted">Mean score (or case pass rate) per metric and '
        "language. Green: every check holds; amber: the aggregate holds but some cases miss their threshold; red: "
        "the aggregate fails (or, without one, cases fail). Hover a cell for n, CI and threshold; the full table is "
        "below each matrix.</p>"
    ]
    headers = ["metric", "lang", "n", "unscored", "mean", "95% CI", "threshold", "cases passed"]
    if with_gates:
        headers.append("F1 / human")
    headers.append("result")
    for suite, rows in rows_by_suite.items():
        body = []
        for row in rows:
            decided = int(row.get("items_passed", 0)) + int(row.get("items_failed", 0))
            result = _row_result(row)
            cells = [
                ("", _e(row.get("metric"))),
                ("", _e(row.get("language"))),
                ("n", _e(row.get("n"))),
                ("n", _e(row.get("n_unscored"))),
                ("n", _e(_shown_mean(row))),
                ("n", _e(_ci(row.get("ci_low"), row.get("ci_high")))),
                ("", _e(_row_threshold(row))),
                ("n", _e(f"{row.get('items_passed', 0)}/{decided}" if decided else "-")),
            ]
            if with_gates:
                gate = row.get("gate") or {}
                shown = f"{_num(gate.get('f1'))} / {_num(gate.get('ceiling'))}" if gate else ""
                cells.append(("n", _e(shown)))
            cells.append(("res", _e(result)))
            css = {"warn": ' class="warn"', "fail": ' class="fail"', "error": ' class="fail"'}.get(
                str(row.get("status")), ""
            )
            body.append(f"<tr{css}>{_cells(cells)}</tr>")
        parts.append(f"<h3>{_e(suite)}</h3>{_overview(rows)}")
        parts.append(f"<details><summary>table: {_e(suite)}</summary>{_table(headers, body)}</details>")
    parts.append("</section>")
    return "".join(parts)


def _bar_for(row: Mapping[str, Any]) -> charts.Bar:
    mean = number(row.get("mean"))
    checks = row.get("aggregates") or []
    value, low, high = mean, number(row.get("ci_low")), number(row.get("ci_high"))
    marker: float | None = None
    kind = "mean"
    if mean is None:
        kind = "pass rate"
        value, low, high = number(row.get("pass_rate")), None, None
        rate_check = next((a for a in checks if a.get("stat") == "pass_rate"), None)
        if rate_check is not None:
            marker = number((rate_check.get("threshold") or {}).get("value"))
    else:
        mean_check = next((a for a in checks if a.get("stat") == "mean"), None)
        if mean_check is not None:
            marker = number((mean_check.get("threshold") or {}).get("value"))
        else:
            marker = next(
                (
                    number(t.get("value"))
                    for t in row.get("case_thresholds") or []
                    if number(t.get("value")) is not None
                ),
                None,
            )
    scale = row.get("scale")
    if kind == "mean" and isinstance(scale, list) and low is not None and high is not None:
        # A t interval near the end of a bounded scale leaves it; nothing beyond the scale can happen.
        low, high = max(low, float(scale[0])), min(high, float(scale[1]))
    result = _row_result(row)
    note = (
        f"{row.get('language')}: {kind} {_num(value)} {_ci(low, high)}, n={row.get('n')}, "
        f"threshold {_row_threshold(row)}, {result}"
    )
    css = {"pass": "pass", "warn": "warn", "fail": "fail", "error": "fail"}.get(str(row.get("status")), "neutral")
    return charts.Bar(value=value, css=css, low=low, high=high, marker=marker, note=note)


def _score_charts(rows_by_suite: Mapping[str, Sequence[Mapping[str, Any]]]) -> str:
    parts = [
        '<section id="scores"><h2>Scores by language</h2>',
        '<p class="legend"><span><i style="background:var(--pass)"></i>passes</span>'
        '<span><i style="background:var(--warn)"></i>aggregate holds, some cases fail</span>'
        '<span><i style="background:var(--fail)"></i>fails</span>'
        "<span>whisker: 95% CI of the mean</span><span>black tick: threshold (aggregate, else per case)</span></p>",
    ]
    for suite, rows in rows_by_suite.items():
        by_metric: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
        for row in rows:
            by_metric[str(row.get("metric"))].append(row)
        figures = []
        for metric, metric_rows in by_metric.items():
            groups = [charts.BarGroup(str(r.get("language")), (_bar_for(r),)) for r in metric_rows]
            categorical = all(number(r.get("mean")) is None for r in metric_rows)
            scale = next((r.get("scale") for r in metric_rows if isinstance(r.get("scale"), list)), None)
            if categorical:
                scale = [0.0, 1.0]
            svg = charts.bar_chart(
                groups,
                title=f"{metric}" + (" (case pass rate)" if categorical else " (mean)"),
                y_min=None if scale is None else float(scale[0]),
                y_max=None if scale is None else float(scale[1]),
            )
            figures.append(f"<figure>{svg}</figure>")
        parts.append(f'<h3>{_e(suite)}</h3><div class="charts">{"".join(figures)}</div>')
    parts.append("</section>")
    return "".join(parts)


# -- agreement gate --------------------------------------------------------------------------


def _confusion(gate: Mapping[str, Any]) -> tuple[list[list[float]], list[str]] | None:
    raw = gate.get("confusion", gate.get("confusion_matrix"))
    labels = gate.get("labels")
    if isinstance(raw, Mapping):
        labels = raw.get("labels", labels)
        raw = raw.get("matrix", raw.get("counts"))
    if not isinstance(raw, list) or not raw or not all(isinstance(r, list) for r in raw):
        return None
    matrix = [[float(number(v) or 0.0) for v in r] for r in raw]
    names = [str(v) for v in labels] if isinstance(labels, list) else [str(i) for i in range(len(matrix))]
    return matrix, names


def _distribution_series(gate: Mapping[str, Any]) -> tuple[list[tuple[str, list[float]]], list[str]] | None:
    raw = gate.get("class_distribution", gate.get("distribution"))
    entries: list[tuple[str, Mapping[str, Any]]] = []
    if isinstance(raw, Mapping):
        entries = [(str(k), v) for k, v in raw.items() if isinstance(v, Mapping)]
    elif isinstance(raw, list):
        entries = [(str(v.get("group", v.get("level", i))), v) for i, v in enumerate(raw) if isinstance(v, Mapping)]
    if not entries:
        return None
    entries.sort(key=lambda e: (LEVEL_ORDER.index(e[0]) if e[0] in LEVEL_ORDER else len(LEVEL_ORDER), e[0]))
    labels = entries[0][1].get("labels") or gate.get("labels") or []
    series: list[tuple[str, list[float]]] = []
    for level, entry in entries:
        n = entry.get("n")
        for side in ("human", "judge"):
            counts = entry.get(f"{side}_counts") or entry.get(f"{side}_share") or []
            series.append(
                (f"{level}{f' (n={n})' if n is not None else ''} {side}", [float(number(c) or 0) for c in counts])
            )
    classes = [str(v) for v in labels] or [str(i) for i in range(max(len(c) for _, c in series))]
    return series, classes


def _agreement(gates: Sequence[Mapping[str, Any]]) -> str:
    parts = [
        '<section id="agreement"><h2>Judge-human agreement</h2>',
        '<p class="legend"><span><i style="background:var(--pass)"></i>judge F1, gate passes</span>'
        '<span><i style="background:var(--fail)"></i>judge F1, gate fails</span>'
        '<span><i style="background:var(--ceil)"></i>human ceiling (mean pairwise annotator F1)</span>'
        "<span>black tick: the gate's minimum F1</span></p>",
    ]
    by_metric: dict[tuple[str, str], list[Mapping[str, Any]]] = defaultdict(list)
    for gate in gates:
        by_metric[(record_group(gate), str(gate.get("metric") or ""))].append(gate)
    figures = []
    for (suite, metric), items in sorted(by_metric.items()):
        groups = []
        for gate in sorted(items, key=lambda g: str(g.get("language"))):
            low, high = interval(gate)
            passed = gate.get("passed")
            f1 = number(gate.get("f1"))
            groups.append(
                charts.BarGroup(
                    str(gate.get("language")),
                    (
                        charts.Bar(
                            f1,
                            "fail" if passed is False else "pass",
                            low,
                            high,
                            gate_threshold(gate),
                            f"{gate.get('language')}: judge F1 {_num(f1)} {_ci(low, high)}, n={gate.get('n')}",
                        ),
                        charts.Bar(
                            number(gate.get("ceiling")),
                            "ceil",
                            note=f"{gate.get('language')}: human ceiling {_num(gate.get('ceiling'))}",
                        ),
                    ),
                )
            )
        title = f"{metric} ({suite})" if suite else metric
        figures.append(f"<figure>{charts.bar_chart(groups, title=title, y_min=0.0, y_max=1.0)}</figure>")
    parts.append(f'<div class="charts">{"".join(figures)}</div>')
    rows = []
    for gate in gates:
        low, high = interval(gate)
        passed = gate.get("passed")
        result = "pass" if passed else "FAIL" if passed is False else "-"
        if passed is False and gate.get("outcome") in NOT_DECIDED:
            result = "xfail"
        cells = [
            ("", _e(record_group(gate))),
            ("", _e(gate.get("metric"))),
            ("", _e(gate.get("language"))),
            ("n", _e(_num(gate.get("n")))),
            ("n", _e(_num(gate.get("f1")))),
            ("n", _e(_ci(low, high))),
            ("n", _e(_num(gate.get("ceiling")))),
            ("n", _e(_num(gate.get("pa", gate.get("percentage_agreement"))))),
            ("n", _e(_num(gate.get("kappa", gate.get("cohen_kappa"))))),
            ("n", _e(_num(gate.get("fleiss", gate.get("fleiss_kappa"))))),
            ("n", _e(_num(skew_value(gate)))),
            ("n", _e(_num(gate_threshold(gate)))),
            ("res", _e(result + (f" ({gate['problem']})" if gate.get("problem") else ""))),
        ]
        css = ' class="fail"' if passed is False else ""
        rows.append(f"<tr{css}>{_cells(cells)}</tr>")
    headers = [
        "suite",
        "metric",
        "lang",
        "n",
        "F1",
        "95% CI",
        "human",
        "PA",
        "kappa",
        "Fleiss",
        "skew",
        "min",
        "result",
    ]
    parts.append(_table(headers, rows))
    matrices: dict[str, list[str]] = defaultdict(list)
    distributions: dict[str, list[str]] = defaultdict(list)
    for (suite, metric), items in sorted(by_metric.items()):
        heading = f"{metric} ({suite})" if suite else metric
        for gate in sorted(items, key=lambda g: str(g.get("language"))):
            name = f"{gate.get('language')} (n={_num(gate.get('n'))})"
            confusion = _confusion(gate)
            if confusion is not None:
                matrix, labels = confusion
                matrices[heading].append(f"<figure>{charts.heatmap(matrix, labels, labels, title=name)}</figure>")
            distribution = _distribution_series(gate)
            if distribution is not None:
                series, classes = distribution
                skew = skew_value(gate)
                title = f"{gate.get('language')}" + (f", skew {skew:+.2f}" if skew is not None else "")
                distributions[heading].append(f"<figure>{charts.stacked_shares(series, classes, title=title)}</figure>")
    if matrices:
        parts.append(
            '<h3>Confusion matrices</h3><p class="muted">Rows: human aggregate label; columns: judge score; '
            "shade: share of the row; outlined: agreement.</p>"
        )
        for heading, figures in matrices.items():
            parts.append(f'<h4>{_e(heading)}</h4><div class="charts">{"".join(figures)}</div>')
    if distributions:
        parts.append(
            '<h3>Class distributions</h3><p class="muted">Share of each score for humans and the judge, overall '
            "and per annotator agreement level (full, partial, none, single). A judge bar darker to the right "
            "than the human one is the high-score bias; skew is judge mean minus human mean.</p>"
        )
        for heading, figures in distributions.items():
            parts.append(f'<h4>{_e(heading)}</h4><div class="charts">{"".join(figures)}</div>')
    parts.append("</section>")
    return "".join(parts)


# -- regression and ranking ------------------------------------------------------------------


def _verdict_css(record: Mapping[str, Any]) -> str:
    return {"fail": "fail", "warn": "warn", "improved": "pass"}.get(regression_status(record), "neutral")


def _regressions(records: Sequence[Mapping[str, Any]]) -> str:
    parts = [
        '<section id="regression"><h2>Regression against the baseline</h2>',
        '<p class="legend"><span>candidate minus baseline, mean per case, with its CI</span>'
        '<span><i style="background:var(--fail)"></i>regressed</span>'
        '<span><i style="background:var(--pass)"></i>improved</span>'
        '<span><i style="background:var(--neutral)"></i>no significant change</span>'
        '<span><i style="background:var(--warn)"></i>drop, not significant (warn)</span>'
        "<span>dashed: allowed drop (margin)</span></p>",
    ]
    by_metric: dict[tuple[str, str], list[Mapping[str, Any]]] = defaultdict(list)
    for record in records:
        by_metric[(record_group(record), str(record.get("metric") or ""))].append(record)
    figures = []
    for (suite, metric), items in sorted(by_metric.items()):
        rows = []
        margins = set()
        for record in sorted(items, key=lambda r: str(r.get("language"))):
            low, high = interval(record)
            delta = number(record.get("mean_difference", record.get("delta")))
            margin = number(record.get("margin"))
            if margin:
                margins.add(-abs(margin))
            rows.append(
                charts.ForestRow(
                    str(record.get("language") or "-"),
                    delta,
                    low,
                    high,
                    _verdict_css(record),
                    f"{record.get('language')}: {_num(delta, 3)} {_ci(low, high, 3)}, p={_num(record.get('p_value'), 3)}"
                    f", {record.get('verdict') or ''}",
                )
            )
        guide = margins.pop() if len(margins) == 1 else None
        title = f"{suite} · {metric}" if suite else metric
        figures.append(f"<figure>{charts.forest_plot(rows, title=title, guide=guide)}</figure>")
    parts.append(f'<div class="charts">{"".join(figures)}</div>')
    table_rows = []
    for record in records:
        low, high = interval(record)
        cells = [
            ("", _e(record.get("suite"))),
            ("", _e(record.get("metric"))),
            ("", _e(record.get("language"))),
            ("n", _e(_num(record.get("n")))),
            ("n", _e(_num(record.get("mean_baseline"), 3))),
            ("n", _e(_num(record.get("mean_candidate"), 3))),
            ("n", _e(_num(record.get("mean_difference", record.get("delta")), 3))),
            ("n", _e(_ci(low, high, 3))),
            ("n", _e(_num(record.get("p_value"), 3))),
            ("res", _e(" · ".join(str(v) for v in (record.get("gate"), record.get("verdict")) if v) or "-")),
        ]
        css = {"fail": ' class="fail"', "warn": ' class="warn"'}.get(_verdict_css(record), "")
        table_rows.append(f"<tr{css}>{_cells(cells)}</tr>")
    headers = ["suite", "metric", "lang", "n", "baseline", "candidate", "difference", "95% CI", "p", "gate · verdict"]
    parts.append(_table(headers, table_rows))
    parts.append("</section>")
    return "".join(parts)


def _rankings(records: Sequence[Mapping[str, Any]]) -> str:
    parts = ['<section id="ranking"><h2>Rankings</h2><div class="charts">']
    for record in records:
        entries = ranking_entries(record)
        rows = [
            charts.ForestRow(f"{i}. {e['name']}", e["strength"], e["ci_low"], e["ci_high"], "neutral")
            for i, e in enumerate(entries, 1)
        ]
        title = " · ".join(str(v) for v in (record.get("suite"), record.get("metric")) if v) or "ranking"
        svg = charts.forest_plot(rows, title=f"{title} (Bradley-Terry strength)", reference=None, value_format="{:.3f}")
        parts.append(f"<figure>{svg}</figure>")
    parts.append("</div></section>")
    return "".join(parts)


# -- failed cases, not run, other ------------------------------------------------------------


def _options(select_id: str, label: str, values: Iterable[str]) -> str:
    options = "".join(f'<option value="{_e(v)}">{_e(v)}</option>' for v in sorted(set(values)))
    return f'<label>{escape(label)} <select id="{select_id}"><option value="">all</option>{options}</select></label>'


def _why(record: Mapping[str, Any]) -> str:
    reason = record.get("unscored_reason")
    detail = record.get("detail")
    if record.get("kind") == "uncalibrated":
        messages = [str(c.get("message")) for c in record.get("checks") or [] if isinstance(c, Mapping)]
        text = "judge not calibrated: " + "; ".join(m for m in messages if m and m != "None")
    elif reason:
        raw = record.get("raw_reply")
        text = f"unscored: {reason}" + (f"; raw reply: {raw}" if raw is not None else "")
    elif record.get("justification"):
        text = str(record["justification"])
    elif isinstance(detail, Mapping) and detail:
        text = "; ".join(f"{k}: {v}" for k, v in sorted(detail.items()))
    else:
        text = ""
    text = " ".join(text.split())
    return text if len(text) <= JUSTIFICATION_CHARS else text[:JUSTIFICATION_CHARS] + " …"


def _failed_aggregates(aggregates: Sequence[Mapping[str, Any]]) -> str:
    rows = []
    for record in aggregates:
        if not is_failure(record.get("outcome")):
            continue
        rows_of: Sequence[Mapping[str, Any]] = record.get("rows") or []
        row: Mapping[str, Any] = next((r for r in rows_of if r.get("language") == record.get("language")), {})
        cells = [
            ("", _e(record.get("suite"))),
            ("", _e(record.get("aggregate"))),
            ("", _e(record.get("language"))),
            ("n", _e(f"{row.get('n_scored', '-')} / {row.get('n_unscored', '-')}")),
            ("n", _e(_num(row.get("value")))),
            ("n", _e(_ci(row.get("ci_low"), row.get("ci_high")))),
            ("", _e(threshold_text(row.get("threshold")))),
            ("why", _e(row.get("problem") or "")),
        ]
        rows.append(f'<tr class="fail">{_cells(cells)}</tr>')
    if not rows:
        return ""
    headers = ["suite", "aggregate", "lang", "scored / unscored", "value", "95% CI", "threshold", "problem"]
    return f'<h3>Failed aggregates <span class="muted">({len(rows)})</span></h3>' + _table(headers, rows)


CASE_STATUS = {
    "passed": "pass",
    "failed": "fail",
    "error": "error",
    "skipped": "skip",
    "xfailed": "xfail",
    "xpassed": "xpass",
}
# Text shared by many records (a case's input, output and reference under each of its metrics;
# suite, language, metric, judge) goes into the page once, in a table the entries index.
_SHARED_TEXT = (("input", "input"), ("output", "output"), ("reference", "reference"), ("judge", "judge"))
_OWN_TEXT = (("justification", "justification"), ("unscored_reason", "reason"), ("raw_reply", "raw"), ("nodeid", "id"))


def case_status(record: Mapping[str, Any]) -> str:
    """``pass``, ``fail``, ``unscored`` (failed without a score), ``error``, ``skip``, ``xfail`` or ``xpass``."""
    status = CASE_STATUS.get(str(record.get("outcome")), "error")
    if status == "fail" and (record.get("unscored_reason") is not None or record.get("score") is None):
        return "unscored"
    return status


class _Strings:
    """A string table: each distinct text once, referred to by its index."""

    def __init__(self) -> None:
        self.texts: list[str] = []
        self._index: dict[str, int] = {}

    def ref(self, text: str) -> int:
        found = self._index.get(text)
        if found is None:
            found = self._index[text] = len(self.texts)
            self.texts.append(text)
        return found


def _visible(value: Any) -> str:
    return escape_controls(str(value), MULTILINE)


def _case_entry(record: Mapping[str, Any], strings: _Strings) -> dict[str, Any]:
    """One case for the page's case browser: short keys, shared text as string-table indexes,
    control characters made visible (the JSON carries none raw)."""
    score = record.get("score")
    entry: dict[str, Any] = {
        "s": strings.ref(str(record.get("suite") or "")),
        "c": str(record.get("case") or ""),
        "l": strings.ref(str(record.get("language") or "")),
        "m": strings.ref(str(record.get("metric") or "")),
        "st": case_status(record),
        "v": number(score),
        "sc": _num(score) if number(score) is not None else ("-" if score is None else _visible(score)),
        "t": strings.ref(threshold_text(record.get("threshold"))),
    }
    for name, key in _SHARED_TEXT:
        if record.get(name) is not None:
            entry[key] = strings.ref(_visible(record[name]))
    for name, key in _OWN_TEXT:
        if record.get(name) is not None:
            entry[key] = _visible(record[name])
    if record.get("kind") == "uncalibrated" or not (record.get("unscored_reason") or record.get("justification")):
        # The page shows the reason or the justification itself; anything else is said here.
        why = _why(record)
        if why:
            entry["w"] = _visible(why)
    baseline = record.get("baseline")
    if isinstance(baseline, Mapping):
        entry["bsc"] = _num(baseline.get("score")) if number(baseline.get("score")) is not None else "-"
        changed = ["score"] if entry["bsc"] != entry["sc"] else []
        if baseline.get("output") is not None:
            entry["bout"] = strings.ref(_visible(baseline["output"]))
            if baseline["output"] != record.get("output"):
                changed.append("output")
        entry["ch"] = " and ".join(changed) or "unchanged"
    return entry


def _json_for_script(value: Any) -> str:
    """JSON safe inside ``<script>``: no ``<``, ``>``, ``&`` (no ``</script>``, no ``<!--``) and no raw
    C1 control or line separator (``escape_controls`` later would break a JSON string)."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return re.sub(r"[<>&\x7f-\x9f\u2028\u2029]", lambda m: f"\\u{ord(m.group()):04x}", text)


def _cases(cases: Sequence[Mapping[str, Any]], aggregates: Sequence[Mapping[str, Any]] = ()) -> str:
    """Every case (passing ones too) in a browser the page's script draws from embedded JSON:
    search, filters, sortable columns, one case read in full."""
    strings = _Strings()
    entries = [_case_entry(c, strings) for c in cases[:MAX_CASE_ROWS]]
    failed = sum(1 for e in entries if e["st"] not in ("pass", "skip", "xfail"))
    parts = ['<section id="cases"><h2>Cases</h2>', _failed_aggregates(aggregates)]
    parts.append(f'<h3>Every case <span class="muted">({len(cases):,}, {failed:,} failed or unscored)</span></h3>')
    if not cases:
        parts.append('<p class="muted">No case ran.</p></section>')
        return "".join(parts)
    if len(cases) > len(entries):
        parts.append(
            f'<p class="muted">Showing the first {len(entries):,} of {len(cases):,} cases; '
            "the JSON report (--llmjudge-report=json:PATH) has all of them.</p>"
        )
    parts.append(
        '<div class="filters"><input id="f-q" type="search" placeholder="search: case, input, output, reason..." '
        'aria-label="search cases">'
        + _options("f-suite", "suite", (strings.texts[e["s"]] for e in entries))
        + _options("f-lang", "language", (strings.texts[e["l"]] for e in entries))
        + _options("f-metric", "metric", (strings.texts[e["m"]] for e in entries))
        + _options("f-status", "status", (e["st"] for e in entries))
        + (
            _options("f-change", "vs baseline", (e.get("ch", "no baseline") for e in entries))
            if any("ch" in e for e in entries)
            else ""
        )
        + '<span id="f-count" class="muted"></span></div>'
    )
    headers = [("s", "suite"), ("c", "case"), ("l", "lang"), ("m", "metric"), ("st", "status"), ("v", "score")]
    headers += [("t", "threshold"), ("w", "justification / reason")]
    head = "".join(f'<th data-k="{k}" class="sortable" title="sort">{escape(h)}</th>' for k, h in headers)
    parts.append(
        f'<table id="case-table"><thead><tr>{head}</tr></thead><tbody></tbody></table>'
        '<p><button id="case-more" type="button" hidden>show more</button></p>'
        '<div id="case-detail" hidden></div>'
        f'<script type="application/json" id="case-data">{_json_for_script({"strings": strings.texts, "cases": entries})}</script></section>'
    )
    return "".join(parts)


def _not_run(items: Sequence[Mapping[str, Any]]) -> str:
    rows = [
        f"<tr><td><code>{_e(i.get('nodeid'))}</code></td><td>{_e(i.get('outcome'))}</td>"
        f'<td class="why">{_e(i.get("reason"))}</td></tr>'
        for i in items
    ]
    table = _table(["item", "outcome", "reason"], rows)
    return (
        f'<section id="not-run"><h2>Items without a result <span class="muted">({len(items)})</span></h2>'
        f"<details{' open' if len(items) <= 20 else ''}><summary>skipped or errored before scoring</summary>"
        f"{table}</details></section>"
    )


_SHOWN_APART = ("kind", "nodeid", "outcome", "passed", "language", "value", "threshold")


def _other(records: Sequence[Mapping[str, Any]]) -> str:
    """Records of unknown kinds: one folded table per kind, failures first."""
    by_kind: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for record in records:
        by_kind[str(record.get("kind"))].append(record)
    parts = [
        '<section id="other"><h2>Other results</h2><p class="muted">Result kinds this report version does not '
        "draw, as recorded by their items; the JSON report has them whole.</p>"
    ]
    for kind, items in sorted(by_kind.items()):
        items = sorted(items, key=lambda r: (not is_failure(r.get("outcome")), str(r.get("nodeid"))))
        failed = sum(1 for r in items if is_failure(r.get("outcome")))
        rows = []
        for record in items[:MAX_OTHER_ROWS]:
            rest = {k: v for k, v in record.items() if k not in _SHOWN_APART}
            text = json.dumps(rest, sort_keys=True, ensure_ascii=False)
            text = text if len(text) <= 300 else text[:300] + " …"
            value = record.get("value")
            cells = [
                ("", f"<code>{_e(record.get('nodeid'))}</code>"),
                ("res", _e(record.get("outcome"))),
                ("", _e(record.get("language"))),
                ("n", _e(_num(value) if number(value) is not None else value if value is not None else "")),
                ("", _e(threshold_text(record.get("threshold")))),
                ("why", f"<code>{_e(text)}</code>"),
            ]
            css = ' class="fail"' if is_failure(record.get("outcome")) else ""
            rows.append(f"<tr{css}>{_cells(cells)}</tr>")
        more = f", first {MAX_OTHER_ROWS} shown" if len(items) > MAX_OTHER_ROWS else ""
        summary = f"{_e(kind)}: {len(items)} result(s), {failed} failed{more}"
        table = _table(["item", "outcome", "lang", "value", "threshold", "other fields"], rows)
        parts.append(f"<details{' open' if failed else ''}><summary>{summary}</summary>{table}</details>")
    parts.append("</section>")
    return "".join(parts)


# -- the page --------------------------------------------------------------------------------


def render_html(document: Mapping[str, Any]) -> str:
    """The whole page as text (see the module docstring), with no raw control character in it."""
    rows_by_suite: dict[str, list[Mapping[str, Any]]] = defaultdict(list)
    for row in document.get("summary") or []:
        rows_by_suite[str(row.get("suite"))].append(row)
    rows_by_suite = dict(sorted(rows_by_suite.items()))
    gates = document.get("gates") or []
    regressions = document.get("regressions") or []
    rankings = document.get("rankings") or []
    other = document.get("other") or []
    not_run = document.get("not_run") or []
    sections: list[tuple[str, str, str]] = []
    if rows_by_suite:
        sections.append(("summary", "Summary", _summary(rows_by_suite, bool(gates))))
        sections.append(("scores", "Scores", _score_charts(rows_by_suite)))
    if gates:
        sections.append(("agreement", "Agreement", _agreement(gates)))
    if regressions:
        sections.append(("regression", "Regression", _regressions(regressions)))
    if rankings:
        sections.append(("ranking", "Rankings", _rankings(rankings)))
    blocked = [r for r in other if r.get("kind") == "uncalibrated" and r.get("case")]
    cases = _cases([*(document.get("cases") or []), *blocked], document.get("aggregates") or [])
    sections.append(("cases", "Cases", cases))
    if not_run:
        sections.append(("not-run", "Not run", _not_run(not_run)))
    if other:
        sections.append(("other", "Other", _other(other)))
    nav = "".join(f'<a href="#{anchor}">{escape(title)}</a>' for anchor, title, _ in sections)
    run = document.get("run") or {}
    title = f"pytest-llmjudge report {run.get('timestamp') or ''}".strip()
    body = "".join(html for _, _, html in sections)
    # Text is HTML-escaped where it is placed; control characters (an ESC from a model's
    # output, a C1 \x9b) pass html.escape untouched, so the finished page is swept once.
    page = (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<meta name="generator" content="pytest-llmjudge {_e(run.get("plugin_version"))}">'
        f"<title>{_e(title)}</title><style>{CSS}</style></head>\n<body>"
        f"{_header(document)}<nav>{nav}</nav>\n{body}\n"
        f'<footer class="muted"><p>Report format {_e(document.get("format_version"))}; '
        "self-contained: no network needed to view it.</p></footer>"
        f"<script>{_script()}</script></body></html>\n"
    )
    return escape_controls(page, MULTILINE)


def write_html(document: Mapping[str, Any], path: Path) -> None:
    write_atomic(path, render_html(document), fsync=False, private=False)  # as the JSON report
