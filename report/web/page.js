// stepcast's HTML report: draws the page from the JSON object in #stepcast-data (written by
// cli/report_html.cpp from the same results as the JSON reports) with Apache ECharts, inlined
// before this script. No request leaves the page.
//
// data = {kind: "predict" | "scale" | "compare" | "plan" | "validate", title, subtitle, generator, library,
//         report: <the command's --json object>, predictions: [<predict --json object>, ...],
//         trace: <the simulated step's Trace Event Format object> or null, ...}
// Every chart drawn is listed in window.stepcastCharts ({id, title, chart}) for the tests.
(function () {
  'use strict';

  const data = JSON.parse(document.getElementById('stepcast-data').textContent);
  const charts = [];
  window.stepcastCharts = charts;

  const GiB = 1024 * 1024 * 1024;
  const PART_COLORS = {
    'forward': '#4e79a7', 'backward': '#59a14f', 'recompute': '#b07aa1', 'optimizer': '#9c755f',
    'compute slowed by NCCL': '#bab0ac', 'communication exposed': '#e15759', 'idle': '#f1ce63',
  };
  const PALETTE = ['#4e79a7', '#59a14f', '#e15759', '#f28e2b', '#76b7b2', '#edc948', '#b07aa1',
                   '#ff9da7', '#9c755f', '#bab0ac', '#86bcb6', '#d37295'];

  // ---- small DOM and number helpers ----

  function el(tag, attrs, children) {
    const e = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (k === 'text') e.textContent = v; else e.setAttribute(k, v);
    }
    for (const c of children || []) e.appendChild(typeof c === 'string' ? document.createTextNode(c) : c);
    return e;
  }
  function finite(v) { return typeof v === 'number' && Number.isFinite(v); }
  function fixed(v, digits) { return finite(v) ? v.toFixed(digits) : 'n/a'; }
  function seconds(v) {
    if (!finite(v)) return 'n/a';
    const a = Math.abs(v);
    return a >= 100 ? v.toFixed(0) : a >= 1 ? v.toFixed(3) : a >= 0.01 ? v.toFixed(4) : v.toPrecision(3);
  }
  function grouped(v) { return finite(v) ? Math.round(v).toLocaleString('en-US') : 'n/a'; }
  function gib(bytes) { return finite(bytes) ? (bytes / GiB).toFixed(1) : 'n/a'; }
  function pct(fraction) { return finite(fraction) ? (100 * fraction).toFixed(1) : 'n/a'; }
  function hours(s) { return finite(s) ? (s / 3600).toFixed(2) : 'n/a'; }
  function usd(v) { return finite(v) ? v.toLocaleString('en-US', {maximumFractionDigits: 2, minimumFractionDigits: 2}) : 'n/a'; }

  function section(title, note) {
    const s = el('section', {}, [el('h2', {text: title})]);
    if (note) s.appendChild(el('p', {class: 'note', text: note}));
    document.getElementById('report').appendChild(s);
    return s;
  }

  /// A chart in `parent`, drawn with `option`, listed in window.stepcastCharts.
  function chart(parent, id, title, option, height) {
    const box = el('div', {class: 'chart', id: id});
    if (height) box.style.height = height + 'px';
    parent.appendChild(box);
    const c = echarts.init(box, null, {renderer: 'canvas'});
    c.setOption(Object.assign({animation: false, textStyle: {fontFamily: 'inherit'}}, option));
    charts.push({id: id, title: title, chart: c});
    return c;
  }

  function table(parent, columns, rows) {
    const head = el('tr', {}, columns.map(c => el('th', {class: c.num ? 'num' : '', text: c.title})));
    const body = rows.map(r => el('tr', {}, columns.map((c, i) => {
      const cell = el('td', {class: c.num ? 'num' : '', text: r[i] === undefined ? '' : String(r[i])});
      if (c.verdict) cell.className = 'verdict-' + String(r[i]).toLowerCase();
      return cell;
    })));
    parent.appendChild(el('table', {}, [el('thead', {}, [head]), el('tbody', {}, body)]));
  }

  function figures(parent, items) {
    parent.appendChild(el('div', {class: 'figures'}, items.map(([label, value]) =>
      el('div', {class: 'figure'}, [el('div', {class: 'label', text: label}), el('div', {class: 'value', text: value})]))));
  }

  function assumptions(list, title, note) {
    const s = section(title || 'Assumptions',
                      note || 'Defaults and choices the prediction rests on; change them in the scenario file.');
    s.appendChild(el('ul', {class: 'assumptions'}, (list || []).map(a => el('li', {text: a}))));
    return s;
  }

  // ---- the step's parts, as the text report's step-time table ----

  /// [[part, seconds], ...] summing to the simulated step: the compute parts at full speed,
  /// the time NCCL's SMs cost them, exposed communication and idle time.
  function stepParts(p) {
    const step = p.step_time_s;
    const slowed = p.simulation.compute_busy_s - p.parts.compute_s;
    let idle = step - p.simulation.compute_busy_s - p.simulation.comm_exposed_s;
    if (Math.abs(idle) < 1e-9 * Math.max(1, step)) idle = 0;
    return [['forward', p.parts.forward_s], ['backward', p.parts.backward_s],
            ['recompute', p.parts.recompute_s], ['optimizer', p.parts.optimizer_s],
            ['compute slowed by NCCL', slowed], ['communication exposed', p.simulation.comm_exposed_s],
            ['idle', idle]];
  }

  /// Horizontal stacked bars of the step's parts, one bar per prediction.
  function breakdownChart(parent, id, labels, predictions, extra) {
    const partNames = stepParts(predictions[0]).map(x => x[0])
      .filter(name => predictions.some(p => stepParts(p).find(x => x[0] === name)[1] > 0));
    const series = partNames.map(name => ({
      name: name, type: 'bar', stack: 'step', barMaxWidth: 38,
      itemStyle: {color: PART_COLORS[name]},
      data: predictions.map(p => Math.max(0, stepParts(p).find(x => x[0] === name)[1])),
    }));
    if (extra) extra(series);
    return chart(parent, id, 'Step time breakdown', {
      tooltip: {trigger: 'axis', axisPointer: {type: 'shadow'},
                valueFormatter: v => seconds(v) + ' s'},
      legend: {top: 0, type: 'scroll'},
      grid: {left: 12, right: 40, top: 36, bottom: 44, containLabel: true},
      xAxis: {type: 'value', name: 'time per step (s)', nameLocation: 'middle', nameGap: 28},
      yAxis: {type: 'category', data: labels, inverse: true},
      series: series,
    }, Math.max(170, 90 + 46 * labels.length));
  }

  /// Horizontal stacked bars of memory per GPU by term (GiB), each against its GPU's capacity
  /// (the outlined bar behind).
  function memoryChart(parent, id, labels, memories) {
    const termNames = [];
    for (const m of memories)
      for (const t of m.terms) if (t.bytes > 0 && !termNames.includes(t.name)) termNames.push(t.name);
    const series = [];
    termNames.forEach((name, i) => series.push({
      name: name, type: 'bar', stack: 'memory', barMaxWidth: 38,
      itemStyle: {color: PALETTE[i % PALETTE.length]},
      data: memories.map(m => { const t = m.terms.find(x => x.name === name); return t ? t.bytes / GiB : 0; }),
    }));
    series.push({
      name: 'capacity', type: 'custom', z: 10, itemStyle: {color: '#b3261e'}, encode: {x: 0, y: 1},
      data: memories.map((m, i) => [m.capacity_bytes / GiB, i]), renderItem: capacityMark,
      tooltip: {formatter: pr => 'capacity ' + pr.value[0].toFixed(1) + ' GiB per GPU'},
    });
    return chart(parent, id, 'Memory per GPU', {
      tooltip: {trigger: 'axis', axisPointer: {type: 'shadow'}, valueFormatter: v => fixed(v, 2) + ' GiB'},
      legend: {top: 0, type: 'scroll'},
      grid: {left: 12, right: 130, top: 36, bottom: 44, containLabel: true},
      xAxis: {type: 'value', name: 'memory per GPU (GiB)', nameLocation: 'middle', nameGap: 28},
      yAxis: {type: 'category', data: labels, inverse: true},
      series: series,
    }, Math.max(170, 90 + 46 * labels.length));
  }

  /// A GPU's capacity: a red bar across its row, labelled.
  function capacityMark(params, api) {
    const c = api.coord([api.value(0), api.value(1)]);
    const h = Math.min(api.size([0, 1])[1] * 0.8, 52);
    return {type: 'group', children: [
      {type: 'line', shape: {x1: c[0], y1: c[1] - h / 2, x2: c[0], y2: c[1] + h / 2},
       style: {stroke: '#b3261e', lineWidth: 3}},
      {type: 'text', x: c[0] + 6, y: c[1] - h / 2 + 2,
       style: {text: 'capacity ' + api.value(0).toFixed(1) + ' GiB', fill: '#b3261e', font: '12px sans-serif',
               backgroundColor: 'rgba(255,255,255,0.85)', padding: [1, 3]}}]};
  }

  // ---- the timeline of one simulated step (Trace Event Format -> Gantt rows) ----

  function timelineRows(trace) {
    const events = trace.traceEvents;
    const processes = {}, threads = {}, threadSort = {};
    for (const e of events) {
      if (e.ph !== 'M') continue;
      if (e.name === 'process_name') processes[e.pid] = e.args.name;
      if (e.name === 'thread_name') threads[e.pid + ':' + e.tid] = e.args.name;
      if (e.name === 'thread_sort_index') threadSort[e.pid + ':' + e.tid] = e.args.sort_index;
    }
    const keys = Object.keys(threads).sort((a, b) => {
      const [pa, pb] = [Number(a.split(':')[0]), Number(b.split(':')[0])];
      return pa !== pb ? pa - pb : (threadSort[a] || 0) - (threadSort[b] || 0);
    });
    const classes = new Set(keys.map(k => k.split(':')[0]));
    const rowOf = {}, labels = [];
    for (const k of keys) {
      rowOf[k] = labels.length;
      const proc = processes[k.split(':')[0]] || '';
      const cls = (proc.match(/\(([^)]*)\)\s*$/) || [null, proc])[1];
      labels.push(classes.size > 1 ? cls + ' · ' + threads[k] : 'GPU · ' + threads[k]);
    }
    return {rowOf: rowOf, labels: labels, processes: processes};
  }

  function taskSeries(trace, rows, stepEndMs) {
    const byCategory = {};
    for (const e of trace.traceEvents) {
      if (e.ph !== 'X') continue;
      const row = rows.rowOf[e.pid + ':' + e.tid];
      if (row === undefined) continue;
      (byCategory[e.cat] = byCategory[e.cat] || []).push({
        value: [row, e.ts / 1000, (e.ts + e.dur) / 1000], name: e.name, args: e.args});
    }
    return Object.keys(byCategory).map((cat, i) => ({
      name: cat, type: 'custom', renderItem: ganttItem, encode: {x: [1, 2], y: 0},
      itemStyle: {color: PART_COLORS[cat] || PALETTE[(i + 2) % PALETTE.length]},
      data: byCategory[cat], xAxisIndex: 0, yAxisIndex: 0,
      tooltip: {formatter: pr => taskTooltip(pr, cat)},
    }));
  }

  function taskTooltip(pr, cat) {
    const [s, e] = [pr.value[1], pr.value[2]];
    let text = '<b>' + escapeHtml(pr.name) + '</b> (' + escapeHtml(cat) + ')<br>start ' + s.toFixed(3) +
               ' ms, duration ' + (e - s).toFixed(3) + ' ms';
    const a = pr.data.args || {};
    if (finite(a.bytes)) text += '<br>' + (a.bytes / 1048576).toFixed(1) + ' MiB, ' + escapeHtml(a.collective || '') +
                                 ' ' + escapeHtml(a.algorithm || '') + ' ' + escapeHtml(a.protocol || '');
    if (finite(a.flops)) text += '<br>' + (a.flops / 1e9).toFixed(1) + ' GFLOP';
    return text;
  }

  function escapeHtml(s) {
    return String(s).replace(/[&<>"']/g, c => ({'&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;'}[c]));
  }

  /// One rectangle per task (or link segment): x from start to end, one row per stream.
  function ganttItem(params, api) {
    const row = api.value(0);
    const start = api.coord([api.value(1), row]);
    const end = api.coord([api.value(2), row]);
    const height = api.size([0, 1])[1] * 0.72;
    const rect = echarts.graphic.clipRectByRect(
      {x: start[0], y: start[1] - height / 2, width: Math.max(end[0] - start[0], 0.6), height: height},
      {x: params.coordSys.x, y: params.coordSys.y, width: params.coordSys.width, height: params.coordSys.height});
    return rect && {type: 'rect', shape: rect, style: api.style()};
  }

  /// Link utilization as rows of segments, darker when busier.
  function linkSeries(trace, rows, stepEndMs) {
    const linksPid = Object.keys(rows.processes).find(pid => rows.processes[pid] === 'links');
    const byLink = {};
    for (const e of trace.traceEvents)
      if (e.ph === 'C' && String(e.pid) === linksPid)
        (byLink[e.name] = byLink[e.name] || []).push([e.ts / 1000, e.args.utilization_percent]);
    const segments = [];
    for (const name of Object.keys(byLink)) {
      const row = rows.labels.length;
      rows.labels.push('link · ' + name);
      const points = byLink[name].sort((a, b) => a[0] - b[0]);
      points.forEach(([t, u], i) => {
        const next = i + 1 < points.length ? points[i + 1][0] : stepEndMs;
        if (u > 0 && next > t)
          segments.push({value: [row, t, next, u], name: name,
                         itemStyle: {color: 'rgba(123,82,171,' + (0.2 + 0.8 * Math.min(u, 100) / 100).toFixed(3) + ')'}});
      });
    }
    if (!segments.length) return [];
    return [{name: 'link utilization', type: 'custom', renderItem: ganttItem, encode: {x: [1, 2], y: 0},
             itemStyle: {color: '#7b52ab'}, data: segments, xAxisIndex: 0, yAxisIndex: 0,
             tooltip: {formatter: pr => '<b>' + escapeHtml(pr.name) + '</b><br>' + pr.value[3].toFixed(1) +
                       ' % of capacity from ' + pr.value[1].toFixed(3) + ' to ' + pr.value[2].toFixed(3) + ' ms'}}];
  }

  function memorySeries(trace) {
    const points = trace.traceEvents.filter(e => e.ph === 'C' && e.name === 'memory')
      .map(e => [e.ts / 1000, e.args.allocated_GiB]).sort((a, b) => a[0] - b[0]);
    if (!points.length) return [];
    return [{name: 'memory allocated', type: 'line', step: 'end', showSymbol: false, xAxisIndex: 1, yAxisIndex: 1,
             lineStyle: {color: '#76b7b2'}, areaStyle: {color: 'rgba(118,183,178,0.25)'}, data: points,
             tooltip: {valueFormatter: v => fixed(v, 2) + ' GiB'}}];
  }

  function timelineChart(parent, id, trace, stepTimeS) {
    const stepEndMs = 1000 * stepTimeS;
    const rows = timelineRows(trace);
    const series = taskSeries(trace, rows, stepEndMs).concat(linkSeries(trace, rows, stepEndMs));
    const memory = memorySeries(trace);
    const rowHeight = 26, ganttHeight = rowHeight * rows.labels.length + 10;
    const memTop = 40 + ganttHeight + 56;
    // Both grids share one left edge, so the memory curve lines up with the streams above it.
    const left = Math.min(360, 24 + 6.3 * Math.max(...rows.labels.map(l => l.length)));
    const timeAxis = gridIndex => ({type: 'value', gridIndex: gridIndex, min: 0, max: stepEndMs,
      name: 'time in the step (ms)', nameLocation: 'middle', nameGap: 26,
      axisLabel: {formatter: v => String(+v.toFixed(2))}});
    const grids = [{left: left, right: 40, top: 40, height: ganttHeight}];
    const xAxes = [timeAxis(0)];
    const yAxes = [{type: 'category', gridIndex: 0, data: rows.labels, inverse: true, axisTick: {show: false},
                    axisLabel: {width: left - 16, overflow: 'truncate'}}];
    if (memory.length) {
      grids.push({left: left, right: 40, top: memTop, height: 90});
      xAxes.push(timeAxis(1));
      yAxes.push({type: 'value', gridIndex: 1, name: 'memory allocated (GiB)', nameTextStyle: {align: 'left'},
                  splitNumber: 3});
    }
    const height = (memory.length ? memTop + 90 : 40 + ganttHeight) + 90;
    return chart(parent, id, 'Timeline of one step', {
      tooltip: {trigger: 'item', confine: true},
      legend: {top: 0, type: 'scroll'},
      grid: grids, xAxis: xAxes, yAxis: yAxes,
      dataZoom: [{type: 'slider', xAxisIndex: xAxes.map((_, i) => i), bottom: 8, height: 22, filterMode: 'weakFilter',
                  labelFormatter: v => fixed(v, 1) + ' ms'},
                 {type: 'inside', xAxisIndex: xAxes.map((_, i) => i), filterMode: 'weakFilter'}],
      series: series.concat(memory),
    }, height);
  }

  // ---- pages ----

  function header() {
    const h = document.getElementById('header');
    h.appendChild(el('h1', {text: data.title}));
    if (data.subtitle) h.appendChild(el('p', {class: 'subtitle', text: data.subtitle}));
    h.appendChild(el('p', {class: 'subtitle', text: 'Predicted by stepcast (analytic costs, discrete-event simulation ' +
                                                    'of the step); no GPU was run.'}));
    document.getElementById('footer').appendChild(el('p', {text: 'Generated by ' + data.generator + ' · charts: ' +
      data.library + ' (Apache-2.0), inlined: the page works offline.'}));
  }

  function verdict(v) { return v === 'oom' ? 'OOM' : v === 'tight' ? 'TIGHT' : 'FITS'; }

  function predictPage() {
    const p = data.report;
    const key = section('Key figures');
    figures(key, [
      ['step time (s)', seconds(p.step_time_s)],
      ['tokens/s', grouped(p.tokens_per_s)],
      ['tokens/s per GPU', grouped(p.tokens_per_s_per_gpu)],
      ['MFU (%)', pct(p.mfu)],
      ['time per epoch (h)', hours(p.time_per_epoch_s)],
      ['cost per epoch (USD)', usd(p.cost_per_epoch_usd)],
      ['memory per GPU (GiB)', gib(p.memory_per_gpu_bytes) + ' of ' + gib(p.memory.capacity_bytes)],
      ['memory verdict', verdict(p.memory.verdict)],
    ]);
    if (data.trace) {
      const s = section('Timeline of one step',
        'Simulated streams of the representative GPU (one row per stream: compute, NCCL) and the links ' +
        'that carried traffic (darker = busier); below, memory allocated by the step. Drag the slider or ' +
        'scroll to zoom; hover for details.');
      timelineChart(s, 'timeline', data.trace, p.step_time_s);
    }
    const b = section('Step time breakdown',
      'The simulated step split as in the text report, and the closed-form bounds beside it (every collective ' +
      'hidden; nothing overlapped). Hidden communication (' + seconds(p.parts.comm_hidden_s) +
      ' s) ran under compute and is not in the total.');
    const rows = ['simulated step: ' + seconds(p.step_time_s) + ' s', 'bound: perfect overlap', 'bound: no overlap'];
    breakdownChart(b, 'breakdown', rows, [p], series => {
      series.forEach(x => { x.data = [x.data[0], '-', '-']; });
      series.push({name: 'closed-form bound', type: 'bar', stack: 'step', barMaxWidth: 38, itemStyle: {color: '#8c96a5'},
                   label: {show: true, position: 'right', formatter: pr => seconds(pr.value) + ' s'},
                   data: ['-', p.bounds.perfect_overlap_s, p.bounds.no_overlap_s]});
    });
    const m = section('Memory per GPU', 'Each term of the memory model, stacked, against the GPU\'s capacity; ' +
                      'verdict: ' + verdict(p.memory.verdict) + '.');
    memoryChart(m, 'memory', [p.gpu], [p.memory]);
    collectivesTable(p);
    assumptions(p.assumptions);
    if (p.notes && p.notes.length) assumptions(p.notes, 'Notes of the scenario', 'What the scenario\'s author wrote about it.');
  }

  function collectivesTable(p) {
    if (!p.collectives.length) return;
    const s = section('Collectives', 'Each collective of the step as simulated (one call).');
    table(s, [{title: 'purpose'}, {title: 'op'}, {title: 'bytes per call (MiB)', num: true},
              {title: 'calls per step', num: true}, {title: 'algorithm'}, {title: 'time per call (ms)', num: true},
              {title: 'bus bandwidth (GB/s)', num: true}],
          p.collectives.map(c => [c.purpose, c.op, (c.bytes / 1048576).toFixed(1), c.calls_per_step,
                                  c.algorithm + ' / ' + c.protocol, fixed(1000 * c.time_per_call_s, 3),
                                  fixed(c.busbw_GBps, 1)]));
  }

  function lineChart(parent, id, title, gpus, yName, series) {
    return chart(parent, id, title, {
      title: {text: title, left: 'center', textStyle: {fontSize: 14}},
      tooltip: {trigger: 'axis'},
      legend: {bottom: 0},
      grid: {left: 12, right: 24, top: 60, bottom: 56, containLabel: true},
      xAxis: {type: 'category', data: gpus.map(String), name: 'GPUs (count)', nameLocation: 'middle', nameGap: 26},
      yAxis: {type: 'value', name: yName, nameLocation: 'end', nameGap: 12,
              nameTextStyle: {align: 'left', fontWeight: 'bold'}},
      series: series.map(s => Object.assign({type: 'line', showSymbol: true, symbolSize: 7}, s)),
    }, 300);
  }

  function scalePage() {
    const rows = data.report.rows, gpus = rows.map(r => r.gpus), preds = data.predictions;
    const base = data.report.baseline_gpus ?? gpus[0];  // the fewest GPUs that fit in memory
    const curves = section('Scaling', 'Fixed micro-batch per GPU (the global batch grows with the GPUs); ' +
                           'speed-up and efficiency are throughput relative to ' + base +
                           ' GPU(s), the fewest that fit in memory (none for counts that do not fit).');
    const grid = el('div', {class: 'row3'});
    curves.appendChild(grid);
    const box = () => { const d = el('div'); grid.appendChild(d); return d; };
    lineChart(box(), 'speedup', 'Speed-up', gpus, 'speed-up (x)', [
      {name: 'predicted', data: rows.map(r => r.speedup), itemStyle: {color: '#4e79a7'}},
      {name: 'ideal (linear)', data: gpus.map(g => g / base), lineStyle: {type: 'dashed'}, itemStyle: {color: '#999'}}]);
    lineChart(box(), 'efficiency', 'Scaling efficiency', gpus, 'efficiency (%)', [
      {name: 'predicted', data: rows.map(r => r.scaling_efficiency == null ? null : 100 * r.scaling_efficiency), itemStyle: {color: '#59a14f'}}]);
    const costs = rows.map(r => r.cost_per_epoch_usd);
    if (costs.every(finite)) {
      lineChart(box(), 'cost', 'Cost per epoch', gpus, 'cost per epoch (USD)', [
        {name: 'predicted', data: costs, itemStyle: {color: '#e15759'}}]);
    } else if (rows.every(r => finite(r.time_per_epoch_s))) {
      lineChart(box(), 'epoch', 'Time per epoch', gpus, 'time per epoch (h)', [
        {name: 'predicted', data: rows.map(r => r.time_per_epoch_s / 3600), itemStyle: {color: '#e15759'}}]);
      grid.appendChild(el('p', {class: 'note', text: 'No cost per epoch: the scenario has no price_per_gpu_hour_usd.'}));
    } else {
      grid.appendChild(el('p', {class: 'note', text: 'No cost or time per epoch: the scenario has no dataset' +
                                (data.price_per_gpu_hour_usd ? '.' : ' and no price_per_gpu_hour_usd.')}));
    }
    const labels = gpus.map(g => g + ' GPUs');
    breakdownChart(section('Step time breakdown', 'The simulated step on each GPU count.'), 'breakdown', labels, preds);
    memoryChart(section('Memory per GPU', 'Each term of the memory model, stacked, against the capacity.'),
                'memory', labels, preds.map(p => p.memory));
    const t = section('Rows');
    table(t, [{title: 'GPUs', num: true}, {title: 'nodes', num: true}, {title: 'step time (s)', num: true},
              {title: 'exposed comm (s)', num: true}, {title: 'tokens/s', num: true},
              {title: 'tokens/s per GPU', num: true}, {title: 'MFU (%)', num: true},
              {title: 'time per epoch (h)', num: true}, {title: 'cost per epoch (USD)', num: true},
              {title: 'speed-up (x)', num: true}, {title: 'efficiency (%)', num: true},
              {title: 'memory per GPU (GiB)', num: true}, {title: 'verdict', verdict: true}],
          rows.map(r => [r.gpus, r.nodes, seconds(r.step_time_s), seconds(r.comm_exposed_s), grouped(r.tokens_per_s),
                         grouped(r.tokens_per_s_per_gpu), pct(r.mfu), hours(r.time_per_epoch_s),
                         usd(r.cost_per_epoch_usd), fixed(r.speedup, 2), pct(r.scaling_efficiency),
                         gib(r.memory_per_gpu_bytes), verdict(r.verdict)]));
    assumptions(mergedAssumptions(preds));
  }

  /// The first prediction's assumptions, then any other's not already listed.
  function mergedAssumptions(preds) {
    const out = [];
    for (const p of preds) for (const a of p.assumptions) if (!out.includes(a)) out.push(a);
    return out;
  }

  function compareRanking(rows) {
    if (rows.every(r => finite(r.usd_per_million_tokens)))
      return {by: 'cost per million tokens (USD, lowest first)', key: r => r.usd_per_million_tokens};
    if (rows.every(r => finite(r.time_per_epoch_s)))
      return {by: 'time per epoch (lowest first)', key: r => r.time_per_epoch_s};
    return {by: 'tokens/s (highest first)', key: r => -r.tokens_per_s};
  }

  function comparePage() {
    const rows = data.report.rows.map((r, i) => Object.assign({index: i}, r));
    const ranking = compareRanking(rows);
    const ranked = rows.slice().sort((a, b) => ranking.key(a) - ranking.key(b));
    const t = section('Ranked', 'Ranked by ' + ranking.by + '. Each scenario predicted as written.');
    table(t, [{title: 'rank', num: true}, {title: 'scenario'}, {title: 'hardware'}, {title: 'GPUs', num: true},
              {title: 'step time (s)', num: true}, {title: 'time per epoch (h)', num: true},
              {title: 'tokens/s', num: true}, {title: 'cost per epoch (USD)', num: true},
              {title: 'USD per million tokens', num: true}, {title: 'memory per GPU (GiB)', num: true},
              {title: 'verdict', verdict: true}],
          ranked.map((r, i) => [i + 1, r.scenario, r.hardware, r.gpus, seconds(r.step_time_s), hours(r.time_per_epoch_s),
                                grouped(r.tokens_per_s), usd(r.cost_per_epoch_usd), usd(r.usd_per_million_tokens),
                                gib(r.memory_per_gpu_bytes), verdict(r.verdict)]));
    const models = new Set(rows.map(r => r.model)), tokens = new Set(rows.map(r => r.tokens_per_step));
    if (models.size > 1 || tokens.size > 1)
      t.appendChild(el('p', {class: 'note', text: 'Note: the rows are not the same job (model or tokens per step differ).'}));
    const labels = ranked.map(r => r.scenario);
    const preds = ranked.map(r => data.predictions[r.index]);
    const th = section('Throughput');
    chart(th, 'throughput', 'Throughput', {
      tooltip: {trigger: 'axis', axisPointer: {type: 'shadow'}, valueFormatter: v => grouped(v) + ' tokens/s'},
      grid: {left: 12, right: 60, top: 10, bottom: 44, containLabel: true},
      xAxis: {type: 'value', name: 'throughput (tokens/s)', nameLocation: 'middle', nameGap: 28},
      yAxis: {type: 'category', data: labels, inverse: true},
      series: [{name: 'tokens/s', type: 'bar', barMaxWidth: 38, itemStyle: {color: '#4e79a7'},
                label: {show: true, position: 'right', formatter: pr => grouped(pr.value)},
                data: ranked.map(r => r.tokens_per_s)}],
    }, Math.max(170, 90 + 46 * labels.length));
    breakdownChart(section('Step time breakdown', 'The simulated step of each scenario.'), 'breakdown', labels, preds);
    memoryChart(section('Memory per GPU', 'Each term of the memory model, stacked, against each GPU\'s capacity.'),
                'memory', labels, preds.map(p => p.memory));
    const a = section('Assumptions', 'Defaults and choices each prediction rests on.');
    ranked.forEach(r => {
      const d = el('details', {}, [el('summary', {text: r.scenario + ' (' + r.file + ')'}),
        el('ul', {class: 'assumptions'}, data.predictions[r.index].assumptions.map(x => el('li', {text: x})))]);
      a.appendChild(d);
    });
  }

  function planPage() {
    const r = data.report, preds = data.predictions;
    if (!r.rows.length) {
      section('No layout', 'No layout of the job fits and divides on these GPUs; the rejections by reason: ' +
              r.rejected.map(x => x.description + ' ' + x.count).join('; ') + '.');
      return;
    }
    const t = section('Ranked layouts', 'Best first by the objective (' + r.objective + '); ' + r.enumerated +
      ' layouts enumerated, ' + r.screened + ' screened, ' + r.simulated + ' simulated' +
      (r.exact ? ' (exact: no unsimulated layout can enter the table).' : '.'));
    table(t, [{title: 'rank', num: true}, {title: 'layout'}, {title: 'step time (s)', num: true},
              {title: 'lower bound (s)', num: true}, {title: 'tokens/s per GPU', num: true}, {title: 'MFU (%)', num: true},
              {title: 'memory per GPU (GiB)', num: true}, {title: 'exposed comm (s)', num: true},
              {title: 'objective (' + objectiveUnit(r.objective) + ')', num: true}],
          r.rows.map(x => [x.rank, x.layout.name, seconds(x.step_time_s), seconds(x.lower_bound_s),
                           grouped(x.tokens_per_s_per_gpu), pct(x.mfu), gib(x.memory_per_gpu_bytes),
                           seconds(x.comm_exposed_s), fixed(x.objective, 4)]));
    if (r.why) t.appendChild(el('p', {class: 'note', text: r.why}));
    const labels = r.rows.map(x => '#' + x.rank + ' ' + x.layout.name);
    if (data.trace) {
      const s = section('Timeline of one step of the winner (' + r.rows[0].layout.name + ')',
        'Simulated streams of the representative GPU and the links that carried traffic (darker = busier); ' +
        'below, memory allocated by the step. Drag the slider or scroll to zoom.');
      timelineChart(s, 'timeline', data.trace, r.rows[0].step_time_s);
    }
    breakdownChart(section('Step time breakdown', 'The simulated step of each layout; dots: its closed-form lower bound.'),
                   'breakdown', labels, preds, series => series.push({
                     name: 'lower bound', type: 'scatter', symbol: 'diamond', symbolSize: 11, itemStyle: {color: '#222'},
                     data: r.rows.map(x => x.lower_bound_s)}));
    memoryChart(section('Memory per GPU', 'Each term of the memory model, stacked, against the capacity; layouts ' +
                        'above ' + pct(r.max_memory_fraction) + ' % of it were rejected.'),
                'memory', labels, preds.map(p => p.memory));
    const rejected = r.rejected.filter(x => x.count > 0);
    if (rejected.length) {
      const s = section('Rejected layouts', 'Layouts the search rejected before simulating, by reason.');
      chart(s, 'rejected', 'Rejected layouts', {
        tooltip: {trigger: 'axis', axisPointer: {type: 'shadow'}},
        grid: {left: 12, right: 60, top: 10, bottom: 44, containLabel: true},
        xAxis: {type: 'value', name: 'layouts rejected (count)', nameLocation: 'middle', nameGap: 28, minInterval: 1},
        yAxis: {type: 'category', data: rejected.map(x => x.description), inverse: true},
        series: [{name: 'layouts', type: 'bar', barMaxWidth: 30, itemStyle: {color: '#bab0ac'},
                  label: {show: true, position: 'right'}, data: rejected.map(x => x.count)}],
      }, Math.max(150, 80 + 40 * rejected.length));
    }
    assumptions(preds[0].assumptions, 'Assumptions (the winner)');
  }

  // ---- validate: predictions against measured runs ----

  const METRIC_LABELS = {
    tokens_per_s_per_gpu: 'tokens/s per GPU', step_time_s: 'step time (s)', tflops_per_gpu: 'TFLOP/s per GPU',
    mfu: 'MFU (fraction)', samples_per_s_global: 'samples/s (global)',
  };
  function metricLabel(m) { return METRIC_LABELS[m] || m; }
  /// "owner/repo · path/to/FILE.md" -> "owner/repo · FILE.md": short enough for an axis label.
  function shortSource(src) {
    const [head, tail] = String(src).split(' · ');
    if (tail === undefined) return head.length > 48 ? head.slice(0, 47) + '…' : head;
    const file = tail.split('/').filter(x => x).pop() || tail;
    return head + ' · ' + file;
  }
  function signed(v, digits) { return finite(v) ? (v > 0 ? '+' : '') + v.toFixed(digits) : 'n/a'; }
  function value3(v) { return finite(v) ? (Math.abs(v) >= 1000 ? grouped(v) : v.toPrecision(4)) : 'n/a'; }

  /// Predicted against measured, log-log, one series per metric (each point in its record's
  /// own unit), the diagonal and the +-15% band as lines.
  function validateScatter(parent, runs) {
    const compared = runs.filter(x => x.status === 'ok' && finite(x.predicted) && x.measured > 0 && x.predicted > 0);
    const metrics = [...new Set(compared.map(x => x.metric))];
    const series = [];
    metrics.forEach((m, i) => {
      for (const low of [false, true]) {
        const pts = compared.filter(x => x.metric === m && (x.trust === 'low') === low);
        if (!pts.length) continue;
        series.push({
          name: metricLabel(m) + (low ? ', low trust (not counted)' : ''), type: 'scatter', symbolSize: low ? 7 : 9,
          itemStyle: low ? {color: 'transparent', borderColor: PALETTE[i % PALETTE.length], borderWidth: 1.5}
                         : {color: PALETTE[i % PALETTE.length], opacity: 0.85},
          data: pts.map(x => ({value: [x.measured, x.predicted], name: x.id, source: x.source, error: x.error_pct})),
          tooltip: {formatter: pr => '<b>' + escapeHtml(pr.name) + '</b><br>' + escapeHtml(shortSource(pr.data.source)) +
                    '<br>' + escapeHtml(metricLabel(m)) + ': measured ' + value3(pr.value[0]) + ', predicted ' +
                    value3(pr.value[1]) + ' (' + signed(pr.data.error, 1) + ' %)'},
        });
      }
    });
    const all = compared.flatMap(x => [x.measured, x.predicted]);
    const lo = Math.pow(10, Math.floor(Math.log10(Math.min(...all)))), hi = Math.pow(10, Math.ceil(Math.log10(Math.max(...all))));
    const line = (name, k, color, type) => ({name: name, type: 'line', showSymbol: false, silent: true,
      lineStyle: {color: color, type: type, width: 1}, data: [[lo, lo * k], [hi, hi * k]], tooltip: {show: false}});
    series.push(line('measured = predicted', 1, '#333', 'solid'), line('+15 %', 1.15, '#999', 'dashed'),
                line('-15 %', 0.85, '#999', 'dashed'));
    return chart(parent, 'scatter', 'Predicted against measured', {
      tooltip: {trigger: 'item', confine: true},
      legend: {top: 0, type: 'scroll'},
      grid: {left: 12, right: 30, top: 44, bottom: 48, containLabel: true},
      xAxis: {type: 'log', min: lo, max: hi, name: 'measured (the record\'s metric, in its unit)',
              nameLocation: 'middle', nameGap: 30},
      yAxis: {type: 'log', min: lo, max: hi, name: 'predicted (same unit)', nameLocation: 'middle', nameGap: 52},
      series: series,
    }, 560);
  }

  /// Signed error (%) of each record, one row per source, with the +-15% band.
  function validateErrors(parent, runs, sources) {
    const names = sources.map(x => x.source);
    const rowOf = Object.fromEntries(names.map((n, i) => [n, i]));
    const pts = runs.filter(x => x.status === 'ok' && finite(x.error_pct) && x.trust !== 'low' && rowOf[x.source] !== undefined);
    // A fixed spread within each row (by the record's rank in its row), so equal errors stay visible.
    const seen = {};
    const data = pts.map(x => {
      const k = (seen[x.source] = (seen[x.source] || 0) + 1);
      const offset = ((k * 0.618034) % 1 - 0.5) * 0.5;
      return {value: [x.error_pct, rowOf[x.source] + offset], name: x.id, metric: x.metric};
    });
    const band = (v, name) => ({name: name, type: 'line', showSymbol: false, silent: true, tooltip: {show: false},
      lineStyle: {color: v === 0 ? '#333' : '#999', type: v === 0 ? 'solid' : 'dashed', width: 1},
      data: [[v, -0.5], [v, names.length - 0.5]]});
    return chart(parent, 'errors', 'Signed error by source', {
      tooltip: {trigger: 'item', confine: true},
      legend: {show: false},
      grid: {left: 12, right: 30, top: 12, bottom: 48, containLabel: true},
      xAxis: {type: 'value', name: 'signed error (%): predicted / measured - 1', nameLocation: 'middle', nameGap: 30,
              axisLine: {onZero: false}},
      // Rows at the integers; ticks every half row, labelled at the integers only.
      yAxis: {type: 'value', min: -0.5, max: names.length - 0.5, interval: 0.5, inverse: true,
              axisLine: {onZero: false}, axisTick: {show: false}, splitLine: {show: false},
              axisLabel: {formatter: v => Number.isInteger(v) && names[v] ? shortSource(names[v]) : '', width: 330,
                          overflow: 'truncate'}},
      series: [{name: 'records', type: 'scatter', symbolSize: 8, itemStyle: {color: '#4e79a7', opacity: 0.75}, data: data,
                tooltip: {formatter: pr => '<b>' + escapeHtml(pr.name) + '</b><br>' + escapeHtml(metricLabel(pr.data.metric)) +
                          ': ' + signed(pr.value[0], 1) + ' %'}},
               band(0, 'zero'), band(15, '+15 %'), band(-15, '-15 %')],
    }, Math.max(220, 90 + 34 * names.length));
  }

  function validatePage() {
    const r = data.report, loso = r.summary_loso, free = r.summary_fit_free;
    const key = section('Key figures', 'Leave one source out: each record is predicted with nothing fitted on ' +
      'its own source. Fit-free: kernel tables and datasheets only. Low-trust records are shown but not counted; ' +
      'ordering: pairs of records of one source one knob apart, ordered as measured.');
    figures(key, [
      ['records compared (count)', loso.count + ' of ' + r.runs.length],
      ['skipped (count)', String(loso.skipped)],
      ['median |error| (%)', fixed(loso.median_abs_error_pct, 1)],
      ['p90 |error| (%)', fixed(loso.p90_abs_error_pct, 1)],
      ['max |error| (%)', fixed(loso.max_abs_error_pct, 1)],
      ['ordering (% of pairs)', pct(loso.ordering_accuracy) + ' of ' + loso.ordering_pairs],
      ['fit-free median |error| (%)', fixed(free.median_abs_error_pct, 1)],
      ['fit-free p90 |error| (%)', fixed(free.p90_abs_error_pct, 1)],
    ]);
    if (r.runs.some(x => x.status === 'ok' && finite(x.predicted) && x.measured > 0 && x.predicted > 0))
      validateScatter(section('Predicted against measured', 'Each compared record, log-log in its own metric\'s ' +
        'unit (one colour per metric; hollow: low trust). On the solid line the prediction is exact; dashed: +-15 %.'),
        r.runs);
    const sources = r.sources.filter(x => x.count > 0);
    if (sources.length)
      validateErrors(section('Signed error by source', 'One dot per trusted record: above 0 the prediction is ' +
        'higher than the measurement (a throughput too fast, a step time too slow). Dashed: +-15 %.'), r.runs, sources);
    const t = section('Sources', 'Leave one source out, per source.');
    table(t, [{title: 'source'}, {title: 'compared (count)', num: true}, {title: 'skipped (count)', num: true},
              {title: 'median |error| (%)', num: true}, {title: 'p90 |error| (%)', num: true},
              {title: 'max |error| (%)', num: true}, {title: 'ordering (% of pairs)', num: true}],
          r.sources.map(x => x.count > 0
            ? [x.source, x.count, x.skipped, fixed(x.median_abs_error_pct, 1), fixed(x.p90_abs_error_pct, 1),
               fixed(x.max_abs_error_pct, 1), x.ordering_pairs ? pct(x.ordering_accuracy) + ' of ' + x.ordering_pairs : 'no pairs']
            : [x.source, 0, x.skipped, '–', '–', '–', 'no pairs']));
    const pairs = (r.pairs || []).slice().sort((a, b) => Number(a.right) - Number(b.right));
    if (pairs.length) {
      const total = r.pairs_total ?? pairs.length, wrong = r.pairs_wrong ?? pairs.filter(x => !x.right).length;
      const s = section('Ordering pairs', wrong + ' of ' + total + ' pairs ordered wrong (first)' +
        (pairs.length < total ? '; the first ' + pairs.length + ' are listed (all of them: validate --json --pairs)' : '') +
        '. Each pair: two records of one source one knob apart; "low" is the one measured lower.');
      table(s, [{title: 'knob'}, {title: 'low record'}, {title: 'high record'}, {title: 'measured low / high', num: true},
                {title: 'predicted low / high', num: true}, {title: 'ordered', verdict: true}],
            pairs.map(x => [x.knob, x.low_id, x.high_id, value3(x.measured_low) + ' / ' + value3(x.measured_high),
                            value3(x.predicted_low) + ' / ' + value3(x.predicted_high), x.right ? 'right' : 'WRONG']));
    }
    const rows = r.runs.slice().sort((a, b) =>
      (a.status === 'ok') !== (b.status === 'ok') ? (a.status === 'ok' ? -1 : 1)
        : Math.abs(b.error_pct ?? 0) - Math.abs(a.error_pct ?? 0));
    const rt = section('Records', 'Every record, the largest |error| first, then the skipped ones with the reason.');
    table(rt, [{title: 'record'}, {title: 'source'}, {title: 'metric (unit)'}, {title: 'measured', num: true},
               {title: 'predicted', num: true}, {title: 'error (%)', num: true}, {title: 'trust'}, {title: 'status'}],
          rows.map(x => [x.id, shortSource(x.source), metricLabel(x.metric), value3(x.measured), value3(x.predicted),
                         signed(x.error_pct, 1), x.trust, x.status]));
    const counts = {};
    for (const x of r.runs) for (const a of x.assumptions || []) counts[a] = (counts[a] || 0) + 1;
    const list = Object.entries(counts).sort((a, b) => b[1] - a[1]).map(([a, n]) => a + ' (' + n + (n === 1 ? ' record)' : ' records)'));
    assumptions(list, 'Assumptions', 'What each record left unstated and stepcast assumed, with how many records ' +
                'it was assumed for (printed per record by `stepcast validate`).');
  }

  function objectiveUnit(objective) {
    return objective === 'time' ? 's' : objective === 'tokens_per_s' ? 'tokens/s per GPU' : 'USD per million tokens';
  }

  header();
  ({predict: predictPage, scale: scalePage, compare: comparePage, plan: planPage, validate: validatePage})[data.kind]();
  window.addEventListener('resize', () => charts.forEach(c => c.chart.resize()));
  document.body.setAttribute('data-rendered', String(charts.length));
})();
