"""``--llmjudge-report=html:PATH``: one self-contained HTML file that people read.

Rendered from the typed report document (:class:`~pytest_llmjudge.report.document.ReportDocument`,
read by attribute; numbers through ``util/formatting.py``); no network is needed to view it:
the stylesheet and the one small script are inline, every chart is inline SVG drawn in
Python (``report/charts.py``), nothing is fetched. Sections, each only when the run has
data for it:

1. header: verdict, the run's judge headlines in red when a judge endpoint failed (a dead
   judge, a rejected key: ``run.judge_headlines``), totals, run metadata (judge models,
   rubric hash, plugin version, seeds, pytest arguments) and the judge-call accounting with
   the estimated cost;
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
   by suite, language, metric, status (``pass``, ``fail``, ``unscored``, ``scored`` for a case
   judged only for its suite's aggregates, whose threshold cell names them, ...) and, with a
   baseline, by what changed; sortable columns; a row opens the case in full (input,
   output, reference, justification, reason, raw reply, baseline score and output). The
   URL fragment sets the same: ``report.html#q=word&lang=ja&metric=...&suite=...&status=fail&sort=-v``,
   and ``#case=<node id>`` shows one case alone;
8. items that did not run (skips, invalid suites) and the results drawn as a generic
   table (sanity checks, surrogate rankings, ranking assertions, uncalibrated guards).

Size: a case costs the page its own text and a few short fields, failing or not. Suite,
language, metric and threshold are string-table indexes; any longer text held by more than one case (a case's
input, output and reference under each of its metrics, an unchanged baseline output, a
dead judge's one unscored reason on every case, a reply or a justification a judge
repeats) is stored once in the string table, and a text held once stays inline (see
:func:`_case_data`). The table draws :data:`PAGE_ROWS` rows at a time and cuts
justifications to :data:`JUSTIFICATION_CHARS` characters (the case view shows them whole);
at most :data:`MAX_CASE_ROWS` cases are embedded (the page says when it cut; the JSON
report keeps everything). The embedded JSON holds no raw ``<``, ``>``, ``&`` or control
character: text is control-escaped (``\\x1b``) before encoding, so the page is swept for
control characters around it, not through it. Degenerate cases: no case gives a page that
says so; text unique to every case (a judge that never repeats itself) is as large as it
is (``benchmarks/html_size.py --all-failing --unique``; numbers in docs/reports.md).
"""

from __future__ import annotations

import functools
import json
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from html import escape
from pathlib import Path
from typing import Any

from pytest_llmjudge.records import (
    AggregateRecord,
    CaseRecord,
    GateRecord,
    LeaderboardRecord,
    OtherRecord,
    RankingCheckRecord,
    RegressionRecord,
    Threshold,
    UncalibratedRecord,
)
from pytest_llmjudge.report import charts
from pytest_llmjudge.report.assemble import ALL, NOT_DECIDED, is_failure
from pytest_llmjudge.report.document import NotRun, ReportDocument, RunInfo, SummaryRow, TrendPoint
from pytest_llmjudge.report.terminal import STATUS_TEXT, accounting_line, every_case_unscored, ranking_entries
from pytest_llmjudge.util.atomic import write_atomic
from pytest_llmjudge.util.escaping import MULTILINE, escape_controls
from pytest_llmjudge.util.formatting import format_fixed, format_interval, format_number, format_value, number

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
svg polyline.neutral{fill:none;stroke:var(--neutral);stroke-width:1.5}svg .warn{fill:var(--warn)}svg .pass{fill:var(--pass)}svg .fail{fill:var(--fail)}svg .ceil{fill:var(--ceil)}svg .neutral{fill:var(--neutral)}
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
.headlines{border:2px solid var(--fail);background:#fdecea;color:var(--fail);font-weight:600;border-radius:6px;
padding:6px 12px;margin:8px 0}.headlines p{margin:4px 0;white-space:pre-wrap;word-break:break-word}
"""

SCRIPT = """
(function(){
  var data=document.getElementById('case-data'),table=document.getElementById('case-table');
  if(data&&table){
    var packed=JSON.parse(data.textContent),T=packed.strings,cases=packed.cases,body=table.tBodies[0],
        PAGE=%(page)d,limit=PAGE;
    cases.forEach(function(c){['s','l','m','t','input','output','reference','judge','justification','reason','raw','w',
      'bout','conv','items'].forEach(function(k){
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
        ['status',c.st],['score',c.sc],['threshold',c.t],['judge',c.judge],['input',c.input],['conversation',c.conv],
        ['output',c.output],['reference',c.reference],['judged items',c.items],['justification',c.justification],['reason',c.reason],['raw reply',c.raw],
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


def _threshold(threshold: Threshold | None) -> str:
    """``>= 1.50``, ``== 'hi'``; empty without a threshold."""
    return "" if threshold is None else _threshold_text(threshold.op, threshold.value)


@functools.lru_cache(maxsize=256)
def _threshold_text(op: str, value: float | str | None) -> str:
    # Cached: every case of a suite and metric shares its threshold (10,000 cases, a handful of texts).
    shown = format_number(value) if number(value) is not None else repr(value) if isinstance(value, str) else "-"
    return f"{op} {shown}"


def _table(headers: Sequence[str], rows: Iterable[str], *, attrs: str = "") -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in headers)
    return f"<table{attrs}><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def _cells(values: Sequence[tuple[str, str]]) -> str:
    """``(css class, already-escaped html)`` pairs as ``<td>`` cells."""
    return "".join(f'<td class="{css}">{html}</td>' if css else f"<td>{html}</td>" for css, html in values)


# -- header ----------------------------------------------------------------------------------


def _headlines(run: RunInfo) -> str:
    """The run-level judge failures (a dead judge, a rejected key), in red above everything else."""
    if not run.judge_headlines:
        return ""
    lines = "".join(f"<p>{_e(line)}</p>" for line in run.judge_headlines)
    return f'<div class="headlines" role="alert">{lines}</div>'


def _header(document: ReportDocument) -> str:
    run, totals = document.run, document.totals
    failed = totals.failed + totals.error
    badge = '<span class="badge fail">FAILED</span>' if failed else '<span class="badge pass">PASSED</span>'
    counted = (
        ("passed", totals.passed),
        ("failed", totals.failed),
        ("error", totals.error),
        ("skipped", totals.skipped),
        ("xfailed", totals.xfailed),
        ("xpassed", totals.xpassed),
    )
    counts = ", ".join(f"{count} {kind}" for kind, count in counted if count)
    meta: list[tuple[str, str]] = [
        ("items", _e(counts or "none")),
        ("started", _e(run.timestamp)),
        ("duration", _e(f"{run.duration_s} s") if run.duration_s is not None else "-"),
        ("live judges", _e(", ".join(run.judge_models) or "none")),
        ("scores judged by", _e(", ".join(run.judge_labels) or "-")),
        ("rubric hash", f"<code>{_e(run.rubric_hash or '-')}</code>"),
        ("judge seeds", _e(", ".join(str(s) for s in run.judge_seeds) or "-")),
        (
            "plugin",
            _e(f"pytest-llmjudge {run.plugin_version}, pytest {run.pytest_version}, Python {run.python_version}"),
        ),
        ("pytest args", f"<code>{_e(' '.join(run.pytest_args))}</code>"),
    ]
    accounting = document.accounting
    line = accounting_line(accounting)
    if line:
        meta.append(("judge calls", _e(line.removeprefix("judge calls: "))))
    if accounting is not None and accounting.cost_note and accounting.estimated_cost_usd is None:
        meta.append(("cost", _e(f"not estimated: {accounting.cost_note}")))
    items = "".join(f"<dt>{escape(k)}</dt><dd>{v}</dd>" for k, v in meta)
    return f'<header><h1>pytest-llmjudge report{badge}</h1>{_headlines(run)}<dl class="meta">{items}</dl></header>'


# -- summary and score charts ----------------------------------------------------------------


def _row_threshold(row: SummaryRow) -> str:
    parts = [f"each {_threshold(t)}" for t in row.case_thresholds[:2]]
    parts += [f"{a.stat} {_threshold(a.threshold)}" for a in row.aggregates]
    return "; ".join(parts) or "-"


def _row_result(row: SummaryRow) -> str:
    return STATUS_TEXT.get(row.status, "-")


def _shown_mean(row: SummaryRow) -> str:
    if every_case_unscored(row):
        return "n/a"  # no mean, and no "0%" that reads like a measured rate
    if row.mean is None and row.pass_rate is not None:
        return f"{row.pass_rate:.0%} pass"
    return format_number(row.mean)


def _overview(rows: Sequence[SummaryRow]) -> str:
    """Metric x language matrix of one suite: the value, coloured by the row's verdict."""
    languages = sorted({r.language for r in rows if r.language != ALL})
    if any(r.language == ALL for r in rows):
        languages.append(ALL)
    cells = {(r.metric, r.language): r for r in rows}
    metrics = sorted({r.metric for r in rows})
    body = []
    for metric in metrics:
        tds = [f"<th>{_e(metric)}</th>"]
        for language in languages:
            row = cells.get((metric, language))
            if row is None:
                tds.append("<td></td>")
                continue
            css = {"pass": "ok", "warn": "warn", "fail": "fail", "error": "fail"}.get(row.status, "")
            tip = (
                f"{metric} [{language}] n={row.n}, unscored {row.n_unscored}, "
                f"95% CI {format_interval(row.ci_low, row.ci_high)}, {_row_threshold(row)}: {_row_result(row)}"
            )
            tds.append(f'<td class="n {css}" title="{_e(tip)}">{_e(_shown_mean(row))}</td>')
        body.append(f"<tr>{''.join(tds)}</tr>")
    head = "".join(f"<th>{_e(h)}</th>" for h in ["metric \\ language", *languages])
    return f'<table class="overview"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'


def _summary(rows_by_suite: Mapping[str, Sequence[SummaryRow]], with_gates: bool) -> str:
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
            decided = row.items_passed + row.items_failed
            cells = [
                ("", _e(row.metric)),
                ("", _e(row.language)),
                ("n", _e(row.n)),
                ("n", _e(row.n_unscored)),
                ("n", _e(_shown_mean(row))),
                ("n", _e(format_interval(row.ci_low, row.ci_high))),
                ("", _e(_row_threshold(row))),
                ("n", _e(f"{row.items_passed}/{decided}" if decided else "-")),
            ]
            if with_gates:
                gate = row.gate
                shown = f"{format_number(gate.f1)} / {format_number(gate.ceiling)}" if gate is not None else ""
                cells.append(("n", _e(shown)))
            cells.append(("res", _e(_row_result(row))))
            css = {"warn": ' class="warn"', "fail": ' class="fail"', "error": ' class="fail"'}.get(row.status, "")
            body.append(f"<tr{css}>{_cells(cells)}</tr>")
        parts.append(f"<h3>{_e(suite)}</h3>{_overview(rows)}")
        parts.append(f"<details><summary>table: {_e(suite)}</summary>{_table(headers, body)}</details>")
    parts.append("</section>")
    return "".join(parts)


def _check_value(row: SummaryRow, stat: str) -> float | None:
    """The threshold of the row's aggregate check on ``stat`` (``mean``, ``pass_rate``), if it has one."""
    check = next((a for a in row.aggregates if a.stat == stat), None)
    return None if check is None or check.threshold is None else number(check.threshold.value)


def _bar_for(row: SummaryRow) -> charts.Bar:
    value, low, high = row.mean, row.ci_low, row.ci_high
    if value is None:
        kind = "pass rate"
        value, low, high = row.pass_rate, None, None
        marker = _check_value(row, "pass_rate")
    else:
        kind = "mean"
        has_mean_check = any(a.stat == "mean" for a in row.aggregates)
        marker = (
            _check_value(row, "mean")
            if has_mean_check
            else next((number(t.value) for t in row.case_thresholds if number(t.value) is not None), None)
        )
        if row.scale is not None and low is not None and high is not None:
            # A t interval near the end of a bounded scale leaves it; nothing beyond the scale can happen.
            low, high = max(low, row.scale[0]), min(high, row.scale[1])
    note = (
        f"{row.language}: {kind} {format_number(value)} {format_interval(low, high)}, n={row.n}, "
        f"threshold {_row_threshold(row)}, {_row_result(row)}"
    )
    css = {"pass": "pass", "warn": "warn", "fail": "fail", "error": "fail"}.get(row.status, "neutral")
    return charts.Bar(value=value, css=css, low=low, high=high, marker=marker, note=note)


def _score_charts(rows_by_suite: Mapping[str, Sequence[SummaryRow]]) -> str:
    parts = [
        '<section id="scores"><h2>Scores by language</h2>',
        '<p class="legend"><span><i style="background:var(--pass)"></i>passes</span>'
        '<span><i style="background:var(--warn)"></i>aggregate holds, some cases fail</span>'
        '<span><i style="background:var(--fail)"></i>fails</span>'
        "<span>whisker: 95% CI of the mean</span><span>black tick: threshold (aggregate, else per case)</span></p>",
    ]
    for suite, rows in rows_by_suite.items():
        by_metric: dict[str, list[SummaryRow]] = defaultdict(list)
        for row in rows:
            by_metric[row.metric].append(row)
        figures = []
        for metric, metric_rows in by_metric.items():
            groups = [charts.BarGroup(r.language, (_bar_for(r),)) for r in metric_rows]
            categorical = all(r.mean is None for r in metric_rows)
            scale = [0.0, 1.0] if categorical else next((r.scale for r in metric_rows if r.scale is not None), None)
            svg = charts.bar_chart(
                groups,
                title=f"{metric}" + (" (case pass rate)" if categorical else " (mean)"),
                y_min=None if scale is None else scale[0],
                y_max=None if scale is None else scale[1],
            )
            figures.append(f"<figure>{svg}</figure>")
        parts.append(f'<h3>{_e(suite)}</h3><div class="charts">{"".join(figures)}</div>')
    parts.append("</section>")
    return "".join(parts)


# -- agreement gate --------------------------------------------------------------------------


def _skew(gate: GateRecord) -> float | None:
    return None if gate.skew is None else gate.skew.skew


def _confusion(gate: GateRecord) -> tuple[list[list[float]], list[str]] | None:
    confusion = gate.confusion
    if confusion is None or not confusion.matrix:
        return None
    matrix = [[float(v) for v in row] for row in confusion.matrix]
    return matrix, [str(v) for v in confusion.labels]


def _distribution_series(gate: GateRecord) -> tuple[list[tuple[str, list[float]]], list[str]] | None:
    """Per agreement level, the human and the judge label counts (``ClassDistribution.to_dict``)."""
    raw = gate.distribution or {}
    entries = [(str(level), entry) for level, entry in raw.items() if isinstance(entry, Mapping)]
    if not entries:
        return None
    entries.sort(key=lambda e: (LEVEL_ORDER.index(e[0]) if e[0] in LEVEL_ORDER else len(LEVEL_ORDER), e[0]))
    series: list[tuple[str, list[float]]] = []
    for level, entry in entries:
        n = entry.get("n")
        for side in ("human", "judge"):
            counts = entry.get(f"{side}_counts") or []
            series.append((f"{level}{f' (n={n})' if n is not None else ''} {side}", [number(c) or 0.0 for c in counts]))
    labels = entries[0][1].get("labels") or gate.labels
    classes = [str(v) for v in labels] or [str(i) for i in range(max(len(c) for _, c in series))]
    return series, classes


def _gate_result(gate: GateRecord) -> str:
    result = "pass" if gate.passed else "FAIL"
    if not gate.passed and gate.outcome in NOT_DECIDED:
        result = "xfail"
    return result + (f" ({gate.problem})" if gate.problem else "")


def _agreement(gates: Sequence[GateRecord]) -> str:
    parts = [
        '<section id="agreement"><h2>Judge-human agreement</h2>',
        '<p class="legend"><span><i style="background:var(--pass)"></i>judge F1, gate passes</span>'
        '<span><i style="background:var(--fail)"></i>judge F1, gate fails</span>'
        '<span><i style="background:var(--ceil)"></i>human ceiling (mean pairwise annotator F1)</span>'
        "<span>black tick: the gate's minimum F1</span></p>",
    ]
    by_metric: dict[tuple[str, str], list[GateRecord]] = defaultdict(list)
    for gate in gates:
        by_metric[(gate.suite, gate.metric)].append(gate)
    figures = []
    for (suite, metric), items in sorted(by_metric.items()):
        groups = []
        for gate in sorted(items, key=lambda g: g.language):
            low, high = gate.ci.low, gate.ci.high
            judge_note = f"{gate.language}: judge F1 {format_number(gate.f1)} {format_interval(low, high)}, n={gate.n}"
            groups.append(
                charts.BarGroup(
                    gate.language,
                    (
                        charts.Bar(gate.f1, "pass" if gate.passed else "fail", low, high, gate.threshold, judge_note),
                        charts.Bar(
                            gate.ceiling, "ceil", note=f"{gate.language}: human ceiling {format_number(gate.ceiling)}"
                        ),
                    ),
                )
            )
        title = f"{metric} ({suite})" if suite else metric
        figures.append(f"<figure>{charts.bar_chart(groups, title=title, y_min=0.0, y_max=1.0)}</figure>")
    parts.append(f'<div class="charts">{"".join(figures)}</div>')
    rows = []
    for gate in gates:
        cells = [
            ("", _e(gate.suite)),
            ("", _e(gate.metric)),
            ("", _e(gate.language)),
            ("n", _e(format_number(gate.n))),
            ("n", _e(format_number(gate.f1))),
            ("n", _e(format_interval(gate.ci.low, gate.ci.high))),
            ("n", _e(format_number(gate.ceiling))),
            ("n", _e(format_number(gate.pa))),
            ("n", _e(format_number(gate.kappa))),
            ("n", _e(format_number(gate.fleiss))),
            ("n", _e(format_number(_skew(gate)))),
            ("n", _e(format_number(gate.threshold))),
            ("res", _e(_gate_result(gate))),
        ]
        css = "" if gate.passed else ' class="fail"'
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
        for gate in sorted(items, key=lambda g: g.language):
            name = f"{gate.language} (n={format_number(gate.n)})"
            confusion = _confusion(gate)
            if confusion is not None:
                matrix, labels = confusion
                matrices[heading].append(f"<figure>{charts.heatmap(matrix, labels, labels, title=name)}</figure>")
            distribution = _distribution_series(gate)
            if distribution is not None:
                series, classes = distribution
                skew = _skew(gate)
                title = gate.language + (f", skew {skew:+.2f}" if skew is not None else "")
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


def _verdict_css(record: RegressionRecord) -> str:
    return {"fail": "fail", "warn": "warn", "improved": "pass"}.get(record.status, "neutral")


def _regressions(records: Sequence[RegressionRecord], verdict: str = "") -> str:
    parts = [
        '<section id="regression"><h2>Regression against the baseline</h2>',
        verdict,
        '<p class="legend"><span>candidate minus baseline, mean per case, with its CI</span>'
        '<span><i style="background:var(--fail)"></i>regressed</span>'
        '<span><i style="background:var(--pass)"></i>improved</span>'
        '<span><i style="background:var(--neutral)"></i>no significant change</span>'
        '<span><i style="background:var(--warn)"></i>drop, inconclusive (warn)</span>'
        "<span>dashed: allowed drop (margin)</span></p>",
    ]
    by_metric: dict[tuple[str, str], list[RegressionRecord]] = defaultdict(list)
    for record in records:
        by_metric[(record.suite, record.metric)].append(record)
    figures = []
    for (suite, metric), items in sorted(by_metric.items()):
        rows = []
        margins = set()
        for record in sorted(items, key=lambda r: r.language):
            low, high, delta = record.ci_low, record.ci_high, record.mean_difference
            if record.margin:
                margins.add(-abs(record.margin))
            note = (
                f"{record.language}: {format_number(delta, 3)} {format_interval(low, high, 3)}, "
                f"p={format_number(record.p_value, 3)}, {record.verdict}"
            )
            rows.append(charts.ForestRow(record.language or "-", delta, low, high, _verdict_css(record), note))
        guide = margins.pop() if len(margins) == 1 else None
        title = f"{suite} · {metric}" if suite else metric
        figures.append(f"<figure>{charts.forest_plot(rows, title=title, guide=guide)}</figure>")
    parts.append(f'<div class="charts">{"".join(figures)}</div>')
    table_rows = []
    for record in records:
        cells = [
            ("", _e(record.suite)),
            ("", _e(record.metric)),
            ("", _e(record.language)),
            ("n", _e(format_number(record.n))),
            ("n", _e(format_number(record.mean_baseline, 3))),
            ("n", _e(format_number(record.mean_candidate, 3))),
            ("n", _e(format_number(record.mean_difference, 3))),
            ("n", _e(format_interval(record.ci_low, record.ci_high, 3))),
            ("n", _e(format_number(record.p_value, 3))),
            ("n", _e(format_number(record.p_adjusted, 3))),
            ("res", _e(" · ".join(v for v in (record.gate, record.verdict) if v) or "-")),
        ]
        css = {"fail": ' class="fail"', "warn": ' class="warn"'}.get(_verdict_css(record), "")
        table_rows.append(f"<tr{css}>{_cells(cells)}</tr>")
    headers = [
        "suite",
        "metric",
        "lang",
        "n",
        "baseline",
        "candidate",
        "difference",
        "95% CI",
        "p",
        "p adjusted",
        "gate · verdict",
    ]
    parts.append(_table(headers, table_rows))
    parts.append("</section>")
    return "".join(parts)


def _rankings(records: Sequence[LeaderboardRecord]) -> str:
    parts = ['<section id="ranking"><h2>Rankings</h2><div class="charts">']
    for record in records:
        rows = [
            charts.ForestRow(f"{i}. {s.name}", s.strength, s.ci_low, s.ci_high, "neutral")
            for i, s in enumerate(ranking_entries(record), 1)
        ]
        title = " · ".join(v for v in (record.suite, record.metric) if v) or "ranking"
        svg = charts.forest_plot(rows, title=f"{title} (Bradley-Terry strength)", reference=None, signed=False)
        parts.append(f"<figure>{svg}</figure>")
    parts.append("</div></section>")
    return "".join(parts)


# -- cases -----------------------------------------------------------------------------------


def _options(select_id: str, label: str, values: Iterable[str]) -> str:
    options = "".join(f'<option value="{_e(v)}">{_e(v)}</option>' for v in sorted(set(values)))
    return f'<label>{escape(label)} <select id="{select_id}"><option value="">all</option>{options}</select></label>'


def _failed_aggregates(aggregates: Sequence[AggregateRecord]) -> str:
    rows = []
    for record in aggregates:
        if not is_failure(record.outcome):
            continue
        row = record.row()
        cells = [
            ("", _e(record.suite)),
            ("", _e(record.aggregate)),
            ("", _e(record.language)),
            ("n", _e("- / -" if row is None else f"{row.n_scored} / {row.n_unscored}")),
            ("n", _e(format_number(None if row is None else row.value))),
            ("n", _e("-" if row is None else format_interval(row.ci_low, row.ci_high))),
            ("", _e("" if row is None else _threshold(row.threshold))),
            ("why", _e("" if row is None else row.problem or "")),
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
_SHORT_TEXT = ("s", "l", "m", "t")
"""Keys always given as string-table indexes (few distinct values, repeated on every case)."""
_LONG_TEXT = ("input", "output", "reference", "judge", "justification", "reason", "raw", "w", "bout", "conv", "items")
"""Keys given as an index when the text occurs more than once in the page, else inline."""
PageCase = CaseRecord | UncalibratedRecord


def _status(record: PageCase) -> str:
    """``pass``, ``fail``, ``unscored`` (failed without a score), ``error``, ``skip``, ``xfail`` or ``xpass``;
    for a case judged only for aggregates (no threshold, no item), ``scored`` or ``unscored``."""
    if isinstance(record, CaseRecord) and record.threshold is None:
        return "unscored" if record.score is None or record.unscored_reason is not None else "scored"
    status = CASE_STATUS.get(record.outcome or "", "error")
    if status == "fail" and (
        not isinstance(record, CaseRecord) or record.score is None or record.unscored_reason is not None
    ):
        return "unscored"
    return status


def _why(record: PageCase) -> str | None:
    """What the table's last column says when the page has no reason or justification to show."""
    if isinstance(record, UncalibratedRecord):
        messages = [str(c.get("message")) for c in record.checks if isinstance(c, Mapping)]
        text = "judge not calibrated: " + "; ".join(m for m in messages if m and m != "None")
    elif record.unscored_reason or record.justification:
        return None  # the page's script shows the reason (with the raw reply) or the justification itself
    elif record.detail:
        text = "; ".join(f"{k}: {v}" for k, v in sorted(record.detail.items()))
    else:
        return None
    text = " ".join(text.split())
    return text if len(text) <= JUSTIFICATION_CHARS else text[:JUSTIFICATION_CHARS] + " …"


def _score_text(score: Any) -> str:
    """A number as a table cell; a category (a detected language) as text from the data, made visible."""
    return _visible(score) if isinstance(score, str) else format_number(score)


def _case_entry(record: PageCase) -> tuple[dict[str, Any], tuple[str, str, str, str], dict[str, str]]:
    """One case for the page's case browser: its own fields, then its suite, language, metric and
    threshold, then its longer text by key (the last two placed by :func:`_case_data`)."""
    score = record.score if isinstance(record, CaseRecord) else None
    shown = _score_text(score)
    entry: dict[str, Any] = {"c": record.case or "", "st": _status(record), "v": number(score), "sc": shown}
    if record.nodeid is not None:
        entry["id"] = record.nodeid
    texts: dict[str, str] = {}
    if record.judge is not None:
        texts["judge"] = record.judge
    why = _why(record)
    if why:
        texts["w"] = why
    if not isinstance(record, CaseRecord):
        return entry, (record.suite, record.language, record.metric, ""), texts
    for key, value in (
        ("input", record.input),
        ("output", record.output),
        ("reference", record.reference),
        ("justification", record.justification),
        ("reason", record.unscored_reason),
        ("raw", record.raw_reply),
    ):
        if value is not None:
            texts[key] = value
    if record.transcript:
        # One text, each turn headed by its role; escaped like every text of the page (esc() in the script).
        texts["conv"] = "\n\n".join(f"[{turn.role}]\n{turn.content}" for turn in record.transcript)
    items = _judged_items(record.detail)
    if items:
        texts["items"] = items
    baseline = record.baseline
    if baseline is not None:
        entry["bsc"] = before = format_number(baseline.score)
        changed = ["score"] if before != shown else []
        if baseline.output is not None:
            texts["bout"] = baseline.output
            if baseline.output != record.output:
                changed.append("output")
        entry["ch"] = " and ".join(changed) or "unchanged"
    threshold = _threshold(record.threshold) if record.threshold is not None else "in " + ", ".join(record.aggregates)
    return entry, (record.suite, record.language, record.metric, threshold), texts


# A RAG metric's detail (metrics/rag.py): its list, the text of an entry and its verdict.
_JUDGED_LISTS = (
    ("claims", "claim", "supported"),
    ("passages", "passage", "useful"),
    ("statements", "statement", "attributed"),
)


def _judged_items(detail: Mapping[str, Any]) -> str | None:
    """A RAG metric's claims (passages, statements) with their verdicts and reasons, one per paragraph."""
    for key, text_key, flag in _JUDGED_LISTS:
        entries = detail.get(key)
        if isinstance(entries, list) and entries:
            lines = []
            for entry in entries:
                if not isinstance(entry, dict):
                    continue
                verdict = entry.get(flag)
                mark = "?" if verdict is None else (flag if verdict else f"not {flag}")
                reason = entry.get("reason")
                lines.append(f"[{mark}] {entry.get(text_key, '')}" + (f"\n    {reason}" if reason else ""))
            return "\n".join(lines)
    return None


def _case_data(records: Sequence[PageCase]) -> tuple[list[dict[str, Any]], list[str]]:
    """The case browser's entries and string table.

    Short keys; suite, language, metric and threshold always as string-table indexes; a
    longer text (input, output, reference, justification, unscored reason, raw reply, ...) as an
    index when the page holds it more than once (a case's input under each of its metrics, a
    dead judge's one reason on every case), else inline. Every text has its control
    characters made visible (the JSON carries none raw), each distinct text once.
    """
    built = [_case_entry(record) for record in records]
    seen = Counter(text for _, _, texts in built for text in texts.values())
    table: dict[str, int] = {}
    for entry, short, texts in built:
        for key, text in zip(_SHORT_TEXT, short, strict=True):
            entry[key] = table.setdefault(text, len(table))
        for key, text in texts.items():
            entry[key] = table.setdefault(text, len(table)) if seen[text] > 1 else _visible(text)
    return [entry for entry, _, _ in built], [_visible(text) for text in table]


def _visible(text: str) -> str:
    return escape_controls(text, MULTILINE)


_UNSAFE_IN_SCRIPT = re.compile(r"[<>&\x7f-\x9f\u2028\u2029\ud800-\udfff]")


def _json_for_script(value: Any) -> str:
    """JSON safe inside ``<script>``: no ``<``, ``>``, ``&`` (no ``</script>``, no ``<!--``) and no raw
    C1 control or line separator (``escape_controls`` later would break a JSON string)."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    return _UNSAFE_IN_SCRIPT.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _cases(records: Sequence[PageCase], aggregates: Sequence[AggregateRecord]) -> tuple[str, str, str]:
    """Every case (passing ones too) in a browser the page's script draws from embedded JSON:
    search, filters, sortable columns, one case read in full. Returned as the section's HTML
    before the embedded JSON, the JSON itself (already safe: it is not swept again), and the rest."""
    entries, strings = _case_data(records[:MAX_CASE_ROWS])
    failed = sum(1 for e in entries if e["st"] not in ("pass", "scored", "skip", "xfail"))
    parts = ['<section id="cases"><h2>Cases</h2>', _failed_aggregates(aggregates)]
    parts.append(f'<h3>Every case <span class="muted">({len(records):,}, {failed:,} failed or unscored)</span></h3>')
    if not records:
        parts.append('<p class="muted">No case ran.</p></section>')
        return "".join(parts), "", ""
    if len(records) > len(entries):
        parts.append(
            f'<p class="muted">Showing the first {len(entries):,} of {len(records):,} cases; '
            "the JSON report (--llmjudge-report=json:PATH) has all of them.</p>"
        )
    parts.append(
        '<div class="filters"><input id="f-q" type="search" placeholder="search: case, input, output, reason..." '
        'aria-label="search cases">'
        + _options("f-suite", "suite", (strings[e["s"]] for e in entries))
        + _options("f-lang", "language", (strings[e["l"]] for e in entries))
        + _options("f-metric", "metric", (strings[e["m"]] for e in entries))
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
        '<div id="case-detail" hidden></div><script type="application/json" id="case-data">'
    )
    return "".join(parts), _json_for_script({"strings": strings, "cases": entries}), "</script></section>"


# -- not run, other --------------------------------------------------------------------------


def _not_run(items: Sequence[NotRun]) -> str:
    rows = [
        f'<tr><td><code>{_e(i.nodeid)}</code></td><td>{_e(i.outcome)}</td><td class="why">{_e(i.reason)}</td></tr>'
        for i in items
    ]
    table = _table(["item", "outcome", "reason"], rows)
    return (
        f'<section id="not-run"><h2>Items without a result <span class="muted">({len(items)})</span></h2>'
        f"<details{' open' if len(items) <= 20 else ''}><summary>skipped or errored before scoring</summary>"
        f"{table}</details></section>"
    )


_SHOWN_APART = ("kind", "nodeid", "outcome", "passed", "language", "value", "threshold")


def _other(records: Sequence[OtherRecord]) -> str:
    """Results the report draws no chart for (sanity checks, surrogate rankings, ranking assertions,
    uncalibrated guards): one folded table per kind, failures first, other fields as JSON."""
    by_kind: dict[str, list[OtherRecord]] = defaultdict(list)
    for record in records:
        by_kind[record.kind].append(record)
    parts = [
        '<section id="other"><h2>Other results</h2><p class="muted">Results the report draws no chart for '
        "(judge sanity checks, surrogate rankings, ranking assertions, items stopped for an uncalibrated judge), "
        "one table per kind, failures first; the JSON report has them whole.</p>"
    ]
    for kind, items in sorted(by_kind.items()):
        items = sorted(items, key=lambda r: (not is_failure(r.outcome), str(r.nodeid)))
        failed = sum(1 for r in items if is_failure(r.outcome))
        rows = []
        for record in items[:MAX_OTHER_ROWS]:
            rest = {k: v for k, v in record.to_wire().items() if k not in _SHOWN_APART}
            text = json.dumps(rest, sort_keys=True, ensure_ascii=False)
            text = text if len(text) <= 300 else text[:300] + " …"
            value, threshold = (
                (record.value, record.threshold) if isinstance(record, RankingCheckRecord) else (None, None)
            )
            cells = [
                ("", f"<code>{_e(record.nodeid)}</code>"),
                ("res", _e(record.outcome)),
                ("", _e(record.language)),
                ("n", _e("" if value is None else format_number(value))),
                ("", _e(_threshold(threshold))),
                ("why", f"<code>{_e(text)}</code>"),
            ]
            css = ' class="fail"' if is_failure(record.outcome) else ""
            rows.append(f"<tr{css}>{_cells(cells)}</tr>")
        more = f", first {MAX_OTHER_ROWS} shown" if len(items) > MAX_OTHER_ROWS else ""
        summary = f"{_e(kind)}: {len(items)} result(s), {failed} failed{more}"
        table = _table(["item", "outcome", "lang", "value", "threshold", "other fields"], rows)
        parts.append(f"<details{' open' if failed else ''}><summary>{summary}</summary>{table}</details>")
    parts.append("</section>")
    return "".join(parts)


def _trends(document: ReportDocument) -> str:
    """Each summary row's statistic over the earlier runs of ``--llmjudge-history`` and this one."""
    earlier: dict[tuple[str, str, str], list[TrendPoint]] = defaultdict(list)
    for point in document.history:
        earlier[(point.suite, point.metric, point.language)].append(point)
    rows = []
    for row in sorted(document.summary, key=lambda r: (r.suite, r.metric, r.language == "all", r.language)):
        past = earlier.get((row.suite, row.metric, row.language), [])
        if not past:
            continue
        points = [
            (
                f"{p.timestamp} {(p.commit or '')[:8]} ({p.branch or '?'})",
                p.mean if p.mean is not None else p.pass_rate,
                p.status in ("fail", "error"),
            )
            for p in past
        ]
        now = row.mean if row.mean is not None else row.pass_rate
        points.append(("this run", now, row.status in ("fail", "error")))
        first = points[0][1]
        change = "" if first is None or now is None else format_fixed(now - first, 3)
        cells = [
            ("", _e(row.suite)),
            ("", _e(row.metric)),
            ("", _e(row.language)),
            ("", charts.sparkline(points)),
            ("num", _e(format_value(first)) if first is not None else "-"),
            ("num", _e(format_value(now)) if now is not None else "-"),
            ("num", _e(change)),
            ("", str(len(points))),
        ]
        rows.append(f"<tr>{_cells(cells)}</tr>")
    if not rows:
        return ""
    table = _table(["suite", "metric", "lang", "trend", "first", "now", "change", "runs"], rows)
    return (
        '<section id="history"><h2>History</h2><p class="muted">Mean (or pass rate) of each row over the '
        "earlier runs kept by --llmjudge-history and this run, oldest first; red points failed.</p>"
        f"{table}</section>"
    )


# -- the page --------------------------------------------------------------------------------


def render_html(document: ReportDocument) -> str:
    """The whole page as text (see the module docstring), with no raw control character in it."""
    rows_by_suite: dict[str, list[SummaryRow]] = defaultdict(list)
    for row in document.summary:
        rows_by_suite[row.suite].append(row)
    rows_by_suite = dict(sorted(rows_by_suite.items()))
    sections: list[tuple[str, str, str]] = []
    if rows_by_suite:
        sections.append(("summary", "Summary", _summary(rows_by_suite, bool(document.gates))))
        sections.append(("scores", "Scores", _score_charts(rows_by_suite)))
    if document.gates:
        sections.append(("agreement", "Agreement", _agreement(document.gates)))
    if document.regressions:
        verdict = document.release
        head = (
            ""
            if verdict is None
            else f'<p class="{ {"pass": "pass", "undecided": "warn"}.get(verdict.status, "fail") }">'
            f"<b>{_e(verdict.text)}</b></p>"
        )
        sections.append(("regression", "Regression", _regressions(document.regressions, head)))
    if document.rankings:
        sections.append(("ranking", "Rankings", _rankings(document.rankings)))
    history = _trends(document) if document.history else ""
    if history:
        sections.append(("history", "History", history))
    blocked = [r for r in document.other if isinstance(r, UncalibratedRecord) and r.case]
    cases_head, case_data, cases_tail = _cases([*document.cases, *blocked], document.aggregates)
    sections.append(("cases", "Cases", cases_head))
    after = [cases_tail]
    if document.not_run:
        after.append(_not_run(document.not_run))
    if document.other:
        after.append(_other(document.other))
    nav = "".join(f'<a href="#{anchor}">{escape(title)}</a>' for anchor, title, _ in sections)
    if document.not_run:
        nav += '<a href="#not-run">Not run</a>'
    if document.other:
        nav += '<a href="#other">Other</a>'
    run = document.run
    title = f"pytest-llmjudge report {run.timestamp or ''}".strip()
    before = (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<meta name="generator" content="pytest-llmjudge {_e(run.plugin_version)}">'
        f"<title>{_e(title)}</title><style>{CSS}</style></head>\n<body>"
        f"{_header(document)}<nav>{nav}</nav>\n{''.join(html for _, _, html in sections)}"
    )
    rest = (
        f"{''.join(after)}\n"
        f'<footer class="muted"><p>Report format {_e(document.format_version)}; '
        "self-contained: no network needed to view it.</p></footer>"
        f"<script>{_script()}</script></body></html>\n"
    )
    # Text is HTML-escaped where it is placed; control characters (an ESC from a model's
    # output, a C1 \x9b) pass html.escape untouched, so the page around the case data is
    # swept once. The case data (most of a large page) already has none: no second pass.
    return escape_controls(before, MULTILINE) + case_data + escape_controls(rest, MULTILINE)


def write_html(document: ReportDocument, path: Path) -> None:
    write_atomic(path, render_html(document), fsync=False, private=False)  # as the JSON report
