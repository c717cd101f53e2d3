// Two small SVG charts (no library): a cumulative line and a latency bar series.

const NS = "http://www.w3.org/2000/svg";
const W = 360;
const H = 120;

function svg(): SVGSVGElement {
  const s = document.createElementNS(NS, "svg");
  s.setAttribute("viewBox", `0 0 ${W} ${H}`);
  s.setAttribute("class", "chart");
  return s;
}

function note(s: SVGSVGElement, text: string): SVGSVGElement {
  const t = document.createElementNS(NS, "text");
  t.setAttribute("x", "8");
  t.setAttribute("y", String(H / 2));
  t.textContent = text;
  s.append(t);
  return s;
}

export function lineChart(points: Array<[string, number]>): SVGSVGElement {
  const s = svg();
  if (points.length === 0) return note(s, "no data yet");
  const max = Math.max(...points.map((p) => p[1]), 1);
  const step = points.length > 1 ? (W - 20) / (points.length - 1) : 0;
  const coords = points.map((p, i) => `${10 + i * step},${H - 10 - (p[1] / max) * (H - 30)}`);
  if (points.length === 1) {
    const dot = document.createElementNS(NS, "circle");
    dot.setAttribute("cx", String(W / 2));
    dot.setAttribute("cy", String(H - 10 - (H - 30)));
    dot.setAttribute("r", "4");
    dot.setAttribute("class", "dot");
    s.append(dot);
  }
  const line = document.createElementNS(NS, "polyline");
  line.setAttribute("points", coords.join(" "));
  line.setAttribute("class", "line");
  s.append(line);
  const last = points[points.length - 1];
  return labelled(s, `${last[0]}: ${last[1]}`);
}

function labelled(s: SVGSVGElement, text: string): SVGSVGElement {
  const t = document.createElementNS(NS, "text");
  t.setAttribute("x", "8");
  t.setAttribute("y", "14");
  t.textContent = text;
  s.append(t);
  return s;
}

export function barChart(points: Array<[string, number]>): SVGSVGElement {
  const s = svg();
  if (points.length === 0) return note(s, "no recalls yet");
  const shown = points.slice(-60);
  const max = Math.max(...shown.map((p) => p[1]), 1);
  const bw = (W - 20) / shown.length;
  shown.forEach((p, i) => {
    const r = document.createElementNS(NS, "rect");
    const hgt = (p[1] / max) * (H - 30);
    r.setAttribute("x", String(10 + i * bw));
    r.setAttribute("y", String(H - 10 - hgt));
    r.setAttribute("width", String(Math.max(1, bw - 2)));
    r.setAttribute("height", String(hgt));
    const title = document.createElementNS(NS, "title");
    title.textContent = `${p[0]}: ${p[1]} ms`;
    r.append(title);
    s.append(r);
  });
  return labelled(s, `max ${max.toFixed(1)} ms`);
}
