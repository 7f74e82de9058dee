"""``jaxzero board``'s web server: one page and a small JSON API over one :class:`Session`.

    app = make_app(session)                     # a Starlette app (test it with TestClient)
    serve(session, host="127.0.0.1", port=8765)  # uvicorn, until Ctrl-C

The page (``static/``: HTML, CSS and a little JavaScript, nothing fetched from elsewhere)
asks ``POST /api/open`` for a tab token when it loads; every other request carries it in
the ``X-Board-Tab`` header. The board is one game, so a page opened later takes it over
and an older tab's requests are refused with a message saying so (409). Requests:

=====================  ==========================================================
``GET  /api/view``     the view (:meth:`Session.view`)
``GET  /api/games``    the run's recorded games, newest first (index, label)
``POST /api/new``      ``{"human": 0 | 1}``: a new game, the human first or second
``POST /api/play``     ``{"action": A}`` or ``{"move": "4"}``: the human's move, the agent's reply
``POST /api/agent``    the agent plays the side to move
``POST /api/undo``     take back the human's last move
``POST /api/goto``     ``{"ply": K}``: step to position K of the line
``POST /api/load``     ``{"moves": "..."}``, ``{"sgf": "..."}`` or ``{"game": K}``
=====================  ==========================================================

Each answers with the view; a refused request (an illegal move, a move in a finished game,
a malformed body) with ``{"error": "...", ...view}`` and status 400, never stopping the
server. The searches run in worker threads (``run_in_threadpool``), never on the event
loop, so the server answers while the agent thinks. Whatever address it is bound to, the
server refuses requests whose ``Host`` is not that address and its port (DNS rebinding;
the names it also takes: :mod:`jaxzero.board.hosts`); a POST sent by a page of another
site (its ``Origin`` or ``Sec-Fetch-Site`` says so) is refused, and such a page cannot
set the tab header without a preflight the server never grants. A message never echoes
more than a few hundred characters of a request.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import socket
import threading
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import uvicorn
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from jaxzero.board.hosts import HostCheck, allowed_names
from jaxzero.board.session import BoardError, Session, shortened

STATIC = Path(__file__).parent / "static"
ANOTHER_TAB = (
    "the board was opened in another tab, which plays it now: reload this page to play here"
)
NO_TAB = "the request has no X-Board-Tab header: POST /api/open first, and send the tab it gives"
CROSS_SITE = "the board answers its own page only, not a page of another site"
MAX_BODY = 1 << 20  # an SGF record of a long game is a few kB
MAX_MESSAGE = 400  # characters of an error message (the pieces of a request in it: fewer)


def make_app(
    session: Session,
    host: str = "127.0.0.1",
    port: int | None = None,
    allow_hosts: Iterable[str] = (),
) -> Starlette:
    """The board's web app over ``session`` (see the module docstring).

    Args:
        session: the game it shows.
        host: the address it is served on; it admits only requests to it
            (:func:`jaxzero.board.hosts.allowed_names`).
        port: the port it is served on, which a request must name (None: any).
        allow_hosts: more names a request may give in its ``Host``.

    Returns:
        A Starlette app.
    """
    tab = _Tab()

    async def page(request: Request) -> Response:
        return FileResponse(STATIC / "index.html")

    async def open_tab(request: Request) -> Response:
        if _cross_site(request):
            return JSONResponse({"error": CROSS_SITE}, status_code=403)
        tab.token = secrets.token_urlsafe(12)
        return JSONResponse({"tab": tab.token, **await run_in_threadpool(session.view)})

    def endpoint(act: Callable[[dict[str, Any]], None] | None) -> Route:
        return _endpoint(session, tab, act)

    async def games(request: Request) -> Response:
        if request.headers.get("x-board-tab") != tab.token:
            return _not_this_tab(request)
        return JSONResponse(await run_in_threadpool(session.game_labels))

    routes = [
        Route("/", page),
        Route("/api/open", open_tab, methods=["POST"]),
        Route("/api/view", endpoint(None)),
        Route("/api/games", games),
        Route(
            "/api/new",
            endpoint(lambda body: session.new(_field(body, "human", 0))),
            methods=["POST"],
        ),
        Route("/api/play", endpoint(lambda body: _play(session, body)), methods=["POST"]),
        Route("/api/agent", endpoint(lambda body: session.agent_move()), methods=["POST"]),
        Route("/api/undo", endpoint(lambda body: session.undo()), methods=["POST"]),
        Route(
            "/api/goto", endpoint(lambda body: session.goto(_field(body, "ply"))), methods=["POST"]
        ),
        Route("/api/load", endpoint(lambda body: _load(session, body)), methods=["POST"]),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]
    names = allowed_names(host, allow_hosts)
    middleware = [Middleware(HostCheck, names=names, port=port)]
    return Starlette(routes=routes, middleware=middleware, exception_handlers={500: _failed})


class _Tab:
    """The token of the tab that plays the board (the last one opened)."""

    token = ""


def _endpoint(session: Session, tab: _Tab, act: Callable[[dict[str, Any]], None] | None) -> Any:
    """A request handler: the tab checked, ``act`` on the body in a worker thread (none:
    only the view), the view answered, or the refusal with it."""

    async def handle(request: Request) -> Response:
        if request.method == "POST" and _cross_site(request):
            return JSONResponse({"error": CROSS_SITE}, status_code=403)
        if request.headers.get("x-board-tab") != tab.token:
            return _not_this_tab(request)
        try:
            if act is not None:
                body = await _body(request)
                await run_in_threadpool(act, body)
        except BoardError as error:
            view = await run_in_threadpool(session.view)
            message = shortened(str(error), MAX_MESSAGE)  # the pieces of the request: cut
            return JSONResponse({"error": message, **view}, status_code=400)
        return JSONResponse(await run_in_threadpool(session.view))

    return handle


def _play(session: Session, body: dict[str, Any]) -> None:
    if "action" in body:
        session.play(body["action"])
    elif isinstance(body.get("move"), str):
        session.play_text(body["move"])
    else:
        raise BoardError(
            'say which move: {"action": N} (an action number) or {"move": "..."} '
            "(a move in the game's notation)"
        )


def _load(session: Session, body: dict[str, Any]) -> None:
    if isinstance(body.get("moves"), str):
        session.load_moves(body["moves"])
    elif isinstance(body.get("sgf"), str):
        session.load_sgf(body["sgf"])
    elif "game" in body:
        session.load_game(body["game"])
    else:
        raise BoardError('say what to load: {"moves": "..."}, {"sgf": "..."} or {"game": K}')


def _not_this_tab(request: Request) -> Response:
    if "x-board-tab" not in request.headers:
        return JSONResponse({"error": NO_TAB}, status_code=400)
    return JSONResponse({"error": ANOTHER_TAB, "stale": True}, status_code=409)


def _cross_site(request: Request) -> bool:
    """Whether a page of another site sent ``request`` (the browser says so)."""
    site = request.headers.get("sec-fetch-site", "same-origin")
    origin = request.headers.get("origin")
    other = origin is not None and urlsplit(origin).netloc != request.headers.get("host")
    return site not in ("same-origin", "none") or other


async def _body(request: Request) -> dict[str, Any]:
    """The request's JSON object (BoardError for anything else), read no further than
    :data:`MAX_BODY` bytes."""
    too_big = BoardError(f"the request is larger than the {MAX_BODY} bytes the board takes")
    if int(request.headers.get("content-length") or 0) > MAX_BODY:
        raise too_big
    raw = b""
    async for chunk in request.stream():
        raw += chunk
        if len(raw) > MAX_BODY:
            raise too_big
    if not raw.strip():
        return {}
    try:
        body = json.loads(raw)
    except (ValueError, RecursionError):
        raise BoardError("the request's body is not JSON") from None
    if not isinstance(body, dict):
        raise BoardError("the request's body is not a JSON object")
    return body


def _field(body: dict[str, Any], name: str, default: Any = None) -> Any:
    if name not in body and default is None:
        raise BoardError(f"the request needs {name!r}")
    return body.get(name, default)


async def _failed(request: Request, error: Exception) -> Response:
    """A failure of ours: said on the page, the server goes on."""
    return JSONResponse(
        {"error": shortened(f"the board failed: {type(error).__name__}: {error}")}, status_code=500
    )


def bind(host: str = "127.0.0.1", port: int = 8765) -> socket.socket:
    """A listening socket on ``host:port`` (0: any free port), for :func:`serve`.

    Bound before an agent loads, so that a taken port is said at once.

    Raises:
        OSError: the address cannot be bound (in use, or not this machine's).
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    sock.listen(128)  # connections wait in the backlog until uvicorn accepts them
    return sock


def serve(
    session: Session,
    host: str = "127.0.0.1",
    port: int = 8765,
    on_ready: Callable[[str], None] = print,
    allow_hosts: Iterable[str] = (),
    sock: socket.socket | None = None,
) -> None:
    """Serve the board until Ctrl-C or SIGTERM (then return, after in-flight requests).

    Args:
        session: the game.
        host: the address to bind; 127.0.0.1 (this machine only) by default.
        port: the port; 0 picks a free one.
        on_ready: called with the page's address once the socket is bound.
        allow_hosts: more names requests may reach it by (:func:`make_app`).
        sock: a socket :func:`bind` made for ``host`` (then ``port`` is its port); it is
            closed when the board stops.

    Raises:
        OSError: the address cannot be bound (in use, or not this machine's).
    """
    if sock is None:
        sock = bind(host, port)
    bound = sock.getsockname()[1]
    app = make_app(session, host, bound, allow_hosts)
    config = uvicorn.Config(app, log_level="warning", lifespan="off")
    server = _Server(config)
    shown = f"[{host}]" if ":" in host else host
    on_ready(f"http://{shown}:{bound}/")
    with sock:
        server.run(sockets=[sock])


class _Server(uvicorn.Server):
    """uvicorn's server, stopped by Ctrl-C or SIGTERM: the first ends it gracefully
    (in-flight requests finish), a second at once. While it serves, the command line's
    signal watcher (:mod:`jaxzero.run.life.signals`) is not woken: the server's own handlers run
    promptly, as the main thread runs only the event loop (the searches run in workers)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        if threading.current_thread() is not threading.main_thread():
            yield  # signals reach the main thread only: whoever started this one stops it
            return

        def stop(signum: int, frame: object) -> None:
            name = signal.Signals(signum).name
            if self.should_exit:  # nothing to save: gone now, whatever a worker computes
                os.write(2, f"{name} again: the board stopped at once\n".encode())
                os._exit(128 + signum)
            else:
                self.should_exit = True
                os.write(2, f"{name}: stopping the board (again: at once)\n".encode())

        previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGINT, signal.SIGTERM)}
        wakeup = signal.set_wakeup_fd(-1)
        try:
            yield
        finally:
            signal.set_wakeup_fd(wakeup)
            for sig, handler in previous.items():
                signal.signal(sig, handler)
