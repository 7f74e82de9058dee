"""The web board in a real browser: headless Chromium plays Connect Four against the
shipped agent and a whole game of tic-tac-toe by clicking, sees the agent's replies and
analysis, is refused an illegal move, and its screenshots are boards."""

from __future__ import annotations

import io
import os

import numpy as np
import pytest
from board_pages import (
    CHROMEDRIVER,
    CHROMIUM,
    MISSING,
    browser,
    click_move,
    legal_cells,
    served,
    text,
    wait_ready,
)
from PIL import Image
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from jaxzero.board.server import ANOTHER_TAB

# CI installs Chromium (`make test` runs `make system-deps`): there a missing one fails
pytestmark = pytest.mark.skipif(
    not (CHROMIUM and CHROMEDRIVER) and not os.environ.get("CI"), reason=MISSING
)
C4_BLUE = (0x2A, 0x5D, 0xB0)  # envs.pictures.BOARD["discs"]


def test_connect_four_against_the_shipped_agent_with_its_analysis():
    with served("connect_four", "--simulations", "16") as url, browser() as page:
        page.get(url)
        wait_ready(page)
        assert text(page, "game") == "connect_four" and text(page, "status") == "your move"
        assert legal_cells(page) == list(range(7))
        click_move(page, 3)  # the middle column
        moves = page.find_elements(By.CSS_SELECTOR, "#moves li")
        assert moves[0].text == "4 (you)" and moves[1].text.endswith("(agent)") and len(moves) == 2
        assert text(page, "status") == "your move"
        assert page.find_elements(By.CSS_SELECTOR, "#analysis svg rect[fill-opacity]")
        assert "chooses" in text(page, "analysis-line") and "16 simulations" in text(
            page, "analysis-line"
        )
        assert "chooses" in text(page, "reply-line")  # the search the agent played from
        heights = _analysis_text_px(page)
        assert heights["cells"] and heights["table"], heights  # the labels and the table
        assert min(heights["cells"] + heights["table"]) >= 11, heights
        points = page.find_elements(By.CSS_SELECTOR, "#value-graph circle.value")
        assert len(points) >= 2  # the agent's reply and the position now, over the game
        head = page.find_elements(By.CSS_SELECTOR, "#analysis table.root th")
        assert [h.text for h in head] == ["move", "prior", "visits", "Q", "improved policy"]
        assert not page.find_element(By.ID, "message").is_displayed()
        shot = _screenshot(page)
    assert _share(shot, C4_BLUE) > 0.02  # Connect Four's blue frame is on it


# The rendered size of the analysis' text, px: an SVG label's font size times the scale the
# page draws its picture at; a table cell's computed font size.
TEXT_PX = """
const labels = [...document.querySelectorAll("#analysis svg text")].map(
  (t) => parseFloat(getComputedStyle(t).fontSize) * t.getScreenCTM().a);
const table = [...document.querySelectorAll("#analysis table.root td")].map(
  (c) => parseFloat(getComputedStyle(c).fontSize));
return {cells: labels, table: table};
"""


def _analysis_text_px(page) -> dict[str, list[float]]:
    return page.execute_script(TEXT_PX)


def test_a_whole_game_of_tic_tac_toe_by_clicking_an_illegal_move_and_a_second_tab():
    with served("tic_tac_toe", "--simulations", "8") as url, browser() as page:
        page.get(url)
        wait_ready(page)
        centre = page.find_element(By.CSS_SELECTOR, '#board [data-action="4"]')
        ActionChains(page).double_click(centre).perform()  # one move: the second click waits
        WebDriverWait(page, 120).until(lambda p: p.find_elements(By.CSS_SELECTOR, "#moves li"))
        wait_ready(page)
        assert len(page.find_elements(By.CSS_SELECTOR, "#moves li")) == 2  # and the agent's
        assert not page.find_element(By.ID, "message").is_displayed()
        assert 4 not in legal_cells(page)
        box = page.find_element(By.ID, "move-text")
        box.send_keys("5")  # the centre again, typed
        page.find_element(By.CSS_SELECTOR, "#move-form button").click()
        wait_ready(page)
        assert text(page, "message") == "illegal move: 5 is not legal here"
        plies = 2
        while page.find_element(By.TAG_NAME, "body").get_attribute("data-over") != "1":
            click_move(page, legal_cells(page)[0])
            plies += 2
            assert plies <= 10
        status = text(page, "status")
        assert status in ("game over: a draw", "game over: the agent won"), (
            status
        )  # it plays perfectly
        assert legal_cells(page) == [] and not page.find_element(By.ID, "message").is_displayed()
        shot = _screenshot(page)
        first = page.current_window_handle
        page.switch_to.new_window("tab")
        page.get(url)
        wait_ready(page)
        page.switch_to.window(first)
        page.find_element(By.ID, "new-first").click()
        wait_ready(page)
        assert text(page, "message") == ANOTHER_TAB
    marks = _share(shot, (0x22, 0x22, 0x22))  # the grid's lines and the X and O marks
    assert marks > 0.002


def _screenshot(page) -> np.ndarray:
    """The page as RGB pixels, checked to be a page drawn (not blank, not an error page)."""
    assert "jaxzero board" in page.title
    image = np.asarray(Image.open(io.BytesIO(page.get_screenshot_as_png())).convert("RGB"))
    assert image.shape[0] > 500 and image.shape[1] > 800
    assert image.std() > 20  # not one colour
    return image


def _share(image: np.ndarray, colour: tuple[int, int, int], tolerance: int = 12) -> float:
    """The share of pixels within ``tolerance`` of ``colour``."""
    return float((np.abs(image.astype(int) - colour).max(axis=-1) <= tolerance).mean())
