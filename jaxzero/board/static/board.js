// jaxzero board: the page's few lines of JavaScript. Every change is a request to the
// board's server, which answers with the whole view; this file only draws it.
"use strict";

let tab = null;
let pending = false; // a request is on its way: a click meanwhile (a double click) is ignored
let stale = false; // another tab took the board: this one asks nothing more
let gamesShown = -1; // how many recorded games the list shows
const $ = (id) => document.getElementById(id);

function say(text) {
  $("message").textContent = text || "";
  $("message").hidden = !text;
}

async function call(path, body) {
  if (pending || stale) return;
  pending = true;
  const headers = { "X-Board-Tab": tab };
  const init = body === undefined ? { headers } : {
    method: "POST",
    headers: { ...headers, "Content-Type": "application/json" },
    body: JSON.stringify(body),
  };
  document.body.dataset.busy = "1";
  $("status").textContent = "the agent is thinking...";
  try {
    const answer = await fetch(path, init);
    const view = await answer.json();
    say(view.error);
    if (view.board) draw(view);
    if (view.stale) {
      stale = true;
      document.body.dataset.stale = "1";
      document.querySelectorAll("button").forEach((b) => (b.disabled = true));
    }
    if (view.stale || !view.board) $("status").textContent = "";
  } catch (error) {
    say("the board's server does not answer: is `jaxzero board` still running?");
    $("status").textContent = "";
  } finally {
    pending = false;
    document.body.dataset.busy = "0";
  }
}

async function listGames(count) {
  if (count === gamesShown) return;
  gamesShown = count;
  $("load-game").hidden = count === 0;
  if (count === 0) return;
  const answer = await fetch("/api/games", { headers: { "X-Board-Tab": tab } });
  const games = await answer.json();
  if (Array.isArray(games)) {
    $("games").replaceChildren(...games.map((game) => new Option(game.label, game.index)));
  }
}

function draw(view) {
  $("game").textContent = view.game;
  $("title").textContent = view.title;
  $("board").innerHTML = view.board;
  const cells = new Set();
  $("board").querySelectorAll("[data-action]").forEach((cell) => {
    cells.add(Number(cell.dataset.action));
    cell.addEventListener("click", () => call("/api/play", { action: Number(cell.dataset.action) }));
  });
  // moves without a cell on the board (a pass; every move of a game drawn otherwise)
  const other = $("other-moves");
  other.replaceChildren();
  for (const move of view.legal) {
    if (cells.has(move.action)) continue;
    const button = document.createElement("button");
    button.type = "button";
    button.className = "move";
    button.dataset.action = move.action;
    button.textContent = move.text;
    button.addEventListener("click", () => call("/api/play", { action: move.action }));
    other.append(button);
  }
  $("status").textContent = view.status;
  $("ply").textContent = `position ${view.cursor} of ${view.moves.length}`;
  $("back").disabled = view.cursor === 0;
  $("forward").disabled = view.cursor === view.moves.length;
  const moves = $("moves");
  moves.replaceChildren();
  view.moves.forEach((text, k) => {
    const item = document.createElement("li");
    item.textContent = text.replace(/^\d+\. /, "");
    if (k + 1 === view.cursor) item.className = "current";
    item.addEventListener("click", () => call("/api/goto", { ply: k + 1 }));
    moves.append(item);
  });
  $("value-graph").innerHTML = view.value_graph || "";
  for (const point of document.querySelectorAll("#value-graph circle.value")) {
    point.addEventListener("click", () => call("/api/goto", { ply: Number(point.dataset.ply) }));
  }
  drawAnalysis(view.analysis, "analysis");
  drawAnalysis(view.reply, "reply");
  listGames(view.games);
  $("load-sgf").hidden = !view.sgf;
  $("agent").disabled = view.over;
  document.body.dataset.over = view.over ? "1" : "0";
  document.body.dataset.cursor = view.cursor;
}

function drawAnalysis(analysis, id) {
  const pane = $(id);
  pane.innerHTML = analysis ? analysis.svg : "";
  if (analysis) pane.append(rootTable(analysis));
  // the chosen move's Q is the search's verdict; the root's mean also counts the
  // simulations spent on weaker moves (Gumbel visits several on purpose)
  $(`${id}-line`).textContent = analysis
    ? `chooses ${analysis.chosen} after ${analysis.simulations} simulations: its value ` +
      `${signed(analysis.chosen_value)} for the side to move (the network's value of the ` +
      `position ${signed(analysis.network_value)}; the mean of all simulations ` +
      `${signed(analysis.search_value)}, weaker moves' visits included); main line ` +
      `${analysis.main_line.join(" ") || "-"}`
    : "-";
}

function signed(x) {
  return (x >= 0 ? "+" : "") + x.toFixed(2);
}

function rootTable(analysis) {
  const table = document.createElement("table");
  table.className = "root";
  const head = table.createTHead().insertRow();
  for (const name of ["move", "prior", "visits", "Q", analysis.policy_name]) {
    const cell = document.createElement("th");
    cell.textContent = name;
    head.append(cell);
  }
  const body = table.createTBody();
  for (const row of analysis.rows) {
    const line = body.insertRow();
    if (row.chosen) line.className = "chosen";
    const q = row.q === null ? "-" : signed(row.q);
    for (const value of [row.move, row.prior.toFixed(3), row.visits, q, row.policy.toFixed(3)]) {
      line.insertCell().textContent = value;
    }
  }
  return table;
}

function on(id, event, handler) {
  $(id).addEventListener(event, (e) => {
    e.preventDefault();
    handler();
  });
}

on("new-first", "click", () => call("/api/new", { human: 0 }));
on("new-second", "click", () => call("/api/new", { human: 1 }));
on("undo", "click", () => call("/api/undo", {}));
on("agent", "click", () => call("/api/agent", {}));
on("back", "click", () => call("/api/goto", { ply: Number(document.body.dataset.cursor) - 1 }));
on("forward", "click", () => call("/api/goto", { ply: Number(document.body.dataset.cursor) + 1 }));
on("move-form", "submit", () => call("/api/play", { move: $("move-text").value }));
on("load-moves", "submit", () => call("/api/load", { moves: $("moves-text").value }));
on("load-sgf", "submit", () => call("/api/load", { sgf: $("sgf-text").value }));
on("load-game", "submit", () => call("/api/load", { game: Number($("games").value) }));
$("sgf-file").addEventListener("change", async () => {
  const file = $("sgf-file").files[0];
  if (file) $("sgf-text").value = await file.text();
});

(async () => {
  try {
    const answer = await fetch("/api/open", { method: "POST" });
    const view = await answer.json();
    tab = view.tab;
    say(view.error);
    if (view.board) draw(view);
  } catch (error) {
    say("the board's server does not answer: is `jaxzero board` still running?");
  } finally {
    document.body.dataset.busy = "0";
  }
})();
