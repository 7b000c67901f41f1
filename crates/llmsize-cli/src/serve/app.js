// llmsize serve: the page is a view over the JSON API (/api/params, /api/memory, /api/flops,
// /api/train, /api/presets, /api/gpus), whose answers are the command line's `--json`.
// Its state lives in the URL (/?model=llama-2-7b&gpu=h100&seq=8192) so a view can be shared.
"use strict";

const SEQS = [128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072, 262144, 524288, 1048576];
const BATCHES = [1, 2, 4, 8, 16, 32, 64, 128, 256];
const DTYPES = ["bf16", "fp16", "fp32", "fp8", "int8", "int4", "nf4", "gptq-4bit", "awq-4bit", "mxfp4",
  "q8_0", "q6_k", "q5_k_m", "q4_k_m", "q4_0", "q3_k_m", "q2_k", "iq4_xs"];
const KV_DTYPES = ["bf16", "fp16", "fp32", "fp8", "q8_0", "q4_0"];
const DEFAULTS = { model: "llama-2-7b", gpu: "h100", seq: "4096", batch: "1", dtype: "bf16", kv_dtype: "bf16" };
const URL_KEYS = ["model", "gpu", "seq", "batch", "dtype", "kv_dtype"];

const $ = (id) => document.getElementById(id);
const state = { ...DEFAULTS, config: null };
let generation = 0;

// ---------- numbers ----------

// Integers beyond 2^53 (FLOPs of long contexts) are kept exact as BigInt.
function parseJson(text) {
  return JSON.parse(text, (key, value, context) =>
    typeof value === "number" && Number.isInteger(value) && !Number.isSafeInteger(value) && context && context.source
      ? BigInt(context.source) : value);
}
const exact = (v) => (typeof v === "bigint" ? v : Math.round(Number(v))).toLocaleString("en-US");
function human(v, unit) {
  const n = Number(v);
  const steps = unit === "B"
    ? [[2 ** 40, "TiB"], [2 ** 30, "GiB"], [2 ** 20, "MiB"], [2 ** 10, "KiB"]]
    : [[1e18, "E"], [1e15, "P"], [1e12, "T"], [1e9, "B"], [1e6, "M"], [1e3, "K"]];
  for (const [size, name] of steps) {
    if (Math.abs(n) >= size) return (n / size).toFixed(2) + " " + name + (unit === "B" ? "" : unit || "");
  }
  return n.toLocaleString("en-US") + (unit === "B" ? " B" : unit || "");
}
const bytes = (v) => `${exact(v)} B (${human(v, "B")})`;
const tokens = (n) => (n >= 1024 && n % 1024 === 0 ? `${n / 1024}k` : String(n)) + " tokens";
const LABELS = { ffn: "FFN", lm_head: "LM head", lm_head_transform: "LM head transform", moe_router: "MoE router",
  moe_experts: "MoE experts", moe_shared_experts: "MoE shared experts", ssm: "SSM" };
const label = (key) => LABELS[key] || key.replace(/_/g, " ").replace(/^./, (c) => c.toUpperCase());

// ---------- DOM ----------

function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null) continue;
    if (k === "class") el.className = v; else el.setAttribute(k, v);
  }
  for (const c of children.flat()) {
    if (c !== null && c !== undefined) el.append(c instanceof Node ? c : String(c));
  }
  return el;
}
// A table of items; each row with a formula shows it on hover (title) and below on click.
function table(el, head, rows, sum) {
  el.replaceChildren(h("thead", {}, h("tr", {}, head.map((t, i) => h("th", { class: i ? "n" : "" }, t)))));
  const body = h("tbody");
  for (const r of rows) {
    const tr = h("tr", { class: r.formula ? "item" : "", title: r.formula || null },
      r.cells.map((c, i) => h("td", { class: i ? "n" : "" }, c)));
    body.append(tr);
    if (r.formula) {
      const detail = h("tr", { class: "formula-row", hidden: "" }, h("td", { colspan: String(head.length) }, "= " + r.formula));
      tr.addEventListener("click", () => { detail.hidden = !detail.hidden; });
      body.append(detail);
    }
  }
  if (sum) body.append(h("tr", { class: "sum" }, sum.map((c, i) => h("td", { class: i ? "n" : "" }, c))));
  el.append(body);
}

// ---------- charts ----------

// Every chart is the server's (`/api/<cmd>?…&format=svg`: the same SVG as `llmsize <cmd>
// --format svg`), placed inline so its texts, the exact numbers, are part of the page.
// One drawing code, in the binary: the page draws nothing of its own.
async function chart(el, command, query) {
  try {
    const r = await fetch(`/api/${command}?${query}&format=svg`, fetchOptions());
    const text = await r.text();
    if (!r.ok) {
      el.replaceChildren(h("p", { class: "error" }, text));
      return;
    }
    const svg = new DOMParser().parseFromString(text, "image/svg+xml").documentElement;
    if (svg.nodeName !== "svg") throw new Error("not an SVG");
    svg.removeAttribute("width");
    svg.removeAttribute("height");
    el.replaceChildren(document.importNode(svg, true));
  } catch (e) {
    el.replaceChildren(h("p", { class: "error" }, `The chart could not be drawn: ${e.message}`));
  }
}

// ---------- the API ----------

function fetchOptions() {
  return state.config ? { method: "POST", body: state.config } : {};
}

function query(extra) {
  const q = new URLSearchParams();
  if (!state.config) q.set("model", state.model);
  for (const [k, v] of Object.entries(extra)) if (v !== "" && v !== null && v !== undefined) q.append(k, v);
  return q.toString();
}

async function api(command, q) {
  const r = await fetch(`/api/${command}?${q}`, fetchOptions());
  const text = await r.text();
  if (!r.ok) throw new Error(text);
  // Warnings (stderr on the command line) come one per `X-Llmsize-Warning` header, which
  // fetch joins with ", "; each is form-encoded, so a comma inside one is `%2C`.
  const warned = r.headers.get("x-llmsize-warning");
  const warnings = warned ? warned.split(", ").map((w) => new URLSearchParams("w=" + w).get("w")) : [];
  return { json: parseJson(text), no: r.headers.get("x-llmsize-outcome") === "no", warnings };
}

// ---------- sections ----------

function showParams(p) {
  $("model-name").textContent = p.name;
  $("params-total").textContent = exact(p.total);
  $("params-human").textContent = `(${human(p.total, "")}${p.exact ? "" : ", an estimate"})`;
  const items = Object.entries(p.components).filter(([, v]) => Number(v) !== 0)
    .map(([k, v]) => ({ key: k, label: label(k), value: v, formula: p.formulas[k] }));
  const total = Number(p.total);
  table($("params-table"), ["Component", "Parameters", "Share"],
    items.map((i) => ({ cells: [i.label, exact(i.value), (100 * Number(i.value) / total).toFixed(1) + "%"], formula: i.formula })),
    ["Total", exact(p.total), "100%"]);
  return items;
}

function showMemory(m, no) {
  const verdict = $("memory-verdict");
  if (m.gpu) {
    const fits = m.fits && !no;
    verdict.textContent = `${fits ? "Fits" : "Does not fit"} on ${m.gpu.count > 1 ? m.gpu.count + " × " : ""}${m.gpu.name} (${human(m.gpu.memory_bytes, "B")} each)`;
    verdict.className = "verdict " + (fits ? "good" : "bad");
  } else {
    verdict.textContent = "No GPU chosen";
    verdict.className = "verdict";
  }
  $("memory-per-gpu").textContent = bytes(m.per_gpu_bytes);
  $("memory-total").textContent = bytes(m.total_bytes);
  const kv = (m.kv_cache || []).map((k) => `${k.stack}: ${k.what}, ${exact(k.tokens)} tokens`).join("; ");
  table($("memory-table"), ["Per GPU", "Bytes", ""], [
    { cells: [`Weights (${m.format})`, exact(m.weights_bytes_per_gpu), human(m.weights_bytes_per_gpu, "B")],
      formula: (m.weights || []).map((w) => `${w.storage}: ${exact(w.params)} params → ${exact(w.bytes)} B`).join("; ") },
    { cells: [`KV cache (${m.kv_dtype}, ${tokens(m.seq_len)} × ${m.batch})`, exact(m.kv_cache_bytes_per_gpu), human(m.kv_cache_bytes_per_gpu, "B")],
      formula: `${exact(m.kv_cache_bytes_per_token)} B per token; ${kv}` },
    { cells: ["Activations", exact(m.activation_bytes), human(m.activation_bytes, "B")] },
    { cells: ["Overhead", exact(m.overhead_bytes), human(m.overhead_bytes, "B")] },
    ...(Number(m.state_bytes) ? [{ cells: ["State", exact(m.state_bytes), human(m.state_bytes, "B")] }] : []),
  ], ["Per GPU", exact(m.per_gpu_bytes), human(m.per_gpu_bytes, "B")]);
  $("memory-assumptions").replaceChildren(...(m.assumptions || []).map((a) => h("li", {}, a)));
}

function showFlops(f) {
  $("flops-forward").textContent = exact(f.forward_flops);
  $("flops-token").textContent = `${exact(f.per_token_flops)} FLOPs`;
  const items = f.forward.map((c) => ({ label: label(c.key), value: c.flops, formula: c.formula }));
  table($("flops-table"), ["Forward", "FLOPs"],
    items.map((i) => ({ cells: [i.label, exact(i.value)], formula: i.formula })),
    ["Total", exact(f.forward_flops)]);
  const sp = f.speed;
  const rows = sp ? [
    { cells: ["Time to first token (prefill)", `${(sp.prefill_seconds * 1000).toFixed(1)} ms`], formula: sp.assumptions[0] },
    { cells: ["Decode step", `${(sp.decode_step_seconds * 1000).toFixed(2)} ms (${sp.decode_bound}-bound)`], formula: sp.assumptions[1] },
    { cells: ["Decode speed", `${Number(sp.decode_tokens_per_second).toFixed(1)} tokens/s`] },
  ] : [{ cells: ["Speed", "choose a GPU"] }];
  table($("speed-table"), [`Speed${sp ? " on " + sp.gpus + " × " + sp.gpu : ""}`, ""], rows);
  return items;
}

function showTrain(t, no) {
  const verdict = $("train-verdict");
  if (t.gpu_memory_bytes) {
    const fits = t.fits && !no;
    verdict.textContent = `${fits ? "Fits" : "Does not fit"} one GPU (${human(t.gpu_memory_bytes, "B")})`;
    verdict.className = "verdict " + (fits ? "good" : "bad");
  } else {
    verdict.textContent = "";
  }
  table($("train-table"), ["Per GPU", "Bytes", ""], [
    ...(t.states || []).map((x) => ({ cells: [label(x.key), exact(x.value), human(x.value, "B")], formula: x.formula })),
    { cells: ["Activations (peak)", exact(t.activation_peak_bytes), human(t.activation_peak_bytes, "B")] },
  ], ["Per GPU", exact(t.per_gpu_bytes), human(t.per_gpu_bytes, "B")]);
}

function cliLine() {
  const model = state.config ? "config.json" : state.model;
  return `llmsize memory ${model} --gpu ${state.gpu || "…"} --seq-len ${state.seq} --batch ${state.batch} --dtype ${state.dtype} --kv-dtype ${state.kv_dtype} --json`;
}

// ---------- redraw ----------

async function redraw() {
  const mine = ++generation;
  document.body.dataset.busy = "1";
  const gpu = state.gpu || "";
  const qp = query({});
  const qm = query({ gpu, seq: state.seq, batch: state.batch, dtype: state.dtype, kv_dtype: state.kv_dtype });
  const qf = query({ gpu, seq: state.seq, batch: state.batch, dtype: state.dtype, kv_dtype: state.kv_dtype });
  const qt = query({ gpu, seq: state.seq, batch: state.batch });
  $("cli").textContent = cliLine();
  // Each section stands alone: a question one command cannot answer (a model too long for a
  // setting) leaves the others shown, with the command line's message in its place.
  const [p, m, f, t] = await Promise.allSettled([api("params", qp), api("memory", qm), api("flops", qf), api("train", qt)]);
  if (mine !== generation) return;
  const failed = (r, section) => {
    const box = $(section).querySelector(".section-error") || $(section).appendChild(h("pre", { class: "section-error" }));
    box.textContent = r.status === "rejected" ? r.reason.message : "";
    box.hidden = r.status !== "rejected";
    $(section).classList.toggle("failed", r.status === "rejected");
    return r.status === "rejected";
  };
  if (p.status === "rejected") {
    $("error").textContent = p.reason.message;
    $("error").hidden = false;
  } else {
    $("error").hidden = true;
    showParams(p.value.json);
    syncModel(p.value.json);
    const charts = [chart($("params-chart"), "params", qp)];
    if (!failed(m, "memory")) {
      showMemory(m.value.json, m.value.no);
      syncGpu(m.value.json);
      charts.push(chart($("memory-chart"), "memory", qm));
    }
    if (!failed(f, "flops")) {
      showFlops(f.value.json);
      charts.push(chart($("flops-chart"), "flops", qf));
    }
    if (!failed(t, "train")) showTrain(t.value.json, t.value.no);
    const warnings = [...new Set([p, m, f, t].flatMap((r) => (r.status === "fulfilled" ? r.value.warnings : [])))];
    $("warnings").replaceChildren(...warnings.map((w) => h("li", {}, "warning: " + w)));
    $("warnings").hidden = warnings.length === 0;
    await Promise.all(charts);
  }
  if (mine === generation) document.body.dataset.busy = "0";
}

// The picker shows the preset the answer names (`llama-2-7b` in the URL is `Llama-2-7b-hf`).
function syncGpu(m) {
  if (!m.gpu) return;
  $("gpu").value = m.gpu.name;
  $("gpus").value = String(m.gpu.count);
}

function syncModel(p) {
  const sel = $("model");
  if (state.config) return;
  const match = [...sel.options].find((o) => o.value.toLowerCase() === p.name.toLowerCase());
  if (match) sel.value = match.value;
}

// ---------- controls and the URL ----------

function nearest(list, value) {
  let best = 0;
  list.forEach((v, i) => { if (Math.abs(Math.log(v) - Math.log(value)) < Math.abs(Math.log(list[best]) - Math.log(value))) best = i; });
  return best;
}

function writeUrl() {
  const q = new URLSearchParams();
  for (const k of URL_KEYS) if (!(k === "model" && state.config)) q.set(k, state[k]);
  history.replaceState(null, "", "/?" + q.toString());
}

let timer = null;
function changed() {
  // Busy from the change on, so a reader of the page never sees the old view as done.
  document.body.dataset.busy = "1";
  writeUrl();
  $("seq-value").textContent = tokens(Number(state.seq));
  $("batch-value").textContent = state.batch;
  clearTimeout(timer);
  timer = setTimeout(redraw, 40);
}

function gpuValue() {
  const name = $("gpu").value;
  const n = Math.max(1, Math.min(64, parseInt($("gpus").value, 10) || 1));
  return name ? (n > 1 ? `${name}x${n}` : name) : "";
}

// The table's GPU for `name` (`H100-SXM-80GB`, `h100`, `rtx4090`, `h100x8`) and the count.
function findGpu(gpus, name) {
  const norm = (t) => t.toLowerCase().replace(/[^a-z0-9]/g, "");
  // `a10` is `A10-24GB`, not `A100-…`: a short name ends where the table's name has a dash.
  const prefixes = (n) => n.split("-").map((_, i, parts) => norm(parts.slice(0, i + 1).join("")));
  const find = (t) => t && gpus.find((g) => prefixes(g.name).includes(norm(t)));
  const whole = find(name);
  if (whole) return [whole.name, 1];
  const m = /^(.+)x(\d+)$/i.exec(name);
  const part = m && find(m[1]);
  return part ? [part.name, Math.min(64, Number(m[2]))] : ["", 1];
}

function fill(sel, values, current) {
  sel.replaceChildren(...values.map((v) => h("option", { value: v.value ?? v }, v.label ?? v)));
  if (current !== undefined) sel.value = current;
}

async function start() {
  const url = new URLSearchParams(location.search);
  for (const k of URL_KEYS) if (url.get(k)) state[k] = url.get(k);
  const [presets, gpus] = await Promise.all([
    fetch("/api/presets").then((r) => r.json()),
    fetch("/api/gpus").then((r) => r.json()),
  ]);
  fill($("model"), presets.map((p) => ({ value: p.id, label: `${p.id} — ${human(p.total, "")}` })));
  const modelOption = [...$("model").options].find((o) => o.value.toLowerCase() === state.model.toLowerCase());
  if (modelOption) {
    $("model").value = modelOption.value;
  } else {
    // A name the list does not spell so (a Hub id, a tuned release, a typo): shown as asked.
    $("model").prepend(h("option", { value: state.model }, state.model));
    $("model").value = state.model;
  }
  // `gpu=h100x8`: a name (or a short one the CLI knows, `rtx4090`) and a count.
  fill($("gpu"), [{ value: "", label: "none" }, ...gpus.map((g) => ({ value: g.name, label: g.name }))]);
  const [gpu, count] = findGpu(gpus, state.gpu || "");
  $("gpu").value = gpu;
  $("gpus").value = String(count);
  fill($("dtype"), DTYPES.includes(state.dtype) ? DTYPES : [state.dtype, ...DTYPES], state.dtype);
  fill($("kv_dtype"), KV_DTYPES.includes(state.kv_dtype) ? KV_DTYPES : [state.kv_dtype, ...KV_DTYPES], state.kv_dtype);
  $("seq").max = String(SEQS.length - 1);
  $("seq").value = String(nearest(SEQS, Number(state.seq) || 4096));
  $("batch").max = String(BATCHES.length - 1);
  $("batch").value = String(nearest(BATCHES, Number(state.batch) || 1));

  $("model").addEventListener("change", () => { state.model = $("model").value; state.config = null; changed(); });
  const gpuChanged = () => { state.gpu = gpuValue(); changed(); };
  $("gpu").addEventListener("change", gpuChanged);
  $("gpus").addEventListener("input", gpuChanged);
  $("dtype").addEventListener("change", () => { state.dtype = $("dtype").value; changed(); });
  $("kv_dtype").addEventListener("change", () => { state.kv_dtype = $("kv_dtype").value; changed(); });
  $("seq").addEventListener("input", () => { state.seq = String(SEQS[Number($("seq").value)]); changed(); });
  $("batch").addEventListener("input", () => { state.batch = String(BATCHES[Number($("batch").value)]); changed(); });
  $("use-config").addEventListener("click", () => {
    const text = $("config").value.trim();
    if (text) { state.config = text; changed(); }
  });
  $("clear-config").addEventListener("click", () => { state.config = null; state.model = $("model").value; changed(); });
  setupDrop();
  changed();
}

// ---------- a weight file: only its header leaves the browser ----------

function setupDrop() {
  const drop = $("drop");
  drop.addEventListener("dragover", (e) => { e.preventDefault(); drop.classList.add("over"); });
  drop.addEventListener("dragleave", () => drop.classList.remove("over"));
  drop.addEventListener("drop", (e) => {
    e.preventDefault();
    drop.classList.remove("over");
    if (e.dataTransfer.files[0]) inspect(e.dataTransfer.files[0]);
  });
  $("file").addEventListener("change", () => { if ($("file").files[0]) inspect($("file").files[0]); });
}

// A .safetensors file starts with 8 bytes (little-endian u64: the header's length) and the
// JSON header; only those bytes are read (File.slice) and sent.
async function inspect(file) {
  const out = $("inspect");
  try {
    const head = new DataView(await file.slice(0, 8).arrayBuffer());
    if (head.byteLength < 8) throw new Error("error: not a .safetensors file (shorter than 8 bytes)");
    const n = head.getBigUint64(0, true);
    if (n > 100000000n) throw new Error("error: not a .safetensors file (its header length is implausible)");
    const header = await file.slice(0, 8 + Number(n)).arrayBuffer();
    const q = new URLSearchParams({ name: file.name, size: String(file.size) });
    const r = await fetch(`/api/inspect?${q}`, { method: "POST", body: header });
    const text = await r.text();
    if (!r.ok) throw new Error(text);
    const j = parseJson(text);
    out.replaceChildren(h("p", { class: "total" }, `${file.name}: `, h("span", { id: "inspect-total" }, exact(j.total ?? j.params ?? 0)), " parameters in the header's tensors"),
      h("pre", { class: "formula" }, text.length > 4000 ? text.slice(0, 4000) + "\n…" : text));
  } catch (e) {
    out.replaceChildren(h("pre", { class: "formula" }, e.message));
  }
}

start().catch((e) => {
  $("error").textContent = String(e.message || e);
  $("error").hidden = false;
  document.body.dataset.busy = "0";
});
