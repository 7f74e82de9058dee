"""The docs' screenshots of the web board: each built-in game against its shipped agent,
a few moves in, with the agent's analysis (headless Chromium, `make system-deps`).

    python tools/board_screenshots.py            # writes docs/board/GAME.png
"""

from __future__ import annotations

import argparse
from pathlib import Path

from board_pages import browser, click_move, legal_cells, served, wait_ready

ROOT = Path(__file__).resolve().parents[1]
# the human's moves (action indices; None: the first legal move offered)
GAMES: dict[str, list[int | None]] = {
    "tic_tac_toe": [4, 0],
    "connect_four": [3, 3],
    "go_6x6": [14, 21],
    "star_duel_short": [None, None],
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "board")
    parser.add_argument("--simulations", default="32")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for game, moves in GAMES.items():
        with served(game, "--simulations", args.simulations) as url, browser() as page:
            page.set_window_size(1400, 1150)
            page.get(url)
            wait_ready(page)
            for move in moves:
                offered = legal_cells(page, buttons=True)
                click_move(page, move if move in offered else offered[0])
            path = args.out / f"{game}.png"
            page.save_screenshot(str(path))
            print(f"{game}: {path.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
