"""Driving `jaxzero board` in headless Chromium (Debian's chromium and chromedriver,
installed by `make system-deps`), for the browser tests and the docs' screenshots.

    with served("connect_four") as url, browser() as page:
        page.get(url)
        wait_ready(page)
        click_move(page, 3)
        page.save_screenshot("board.png")
"""

from __future__ import annotations

import contextlib
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

JAXZERO = str(Path(sys.executable).with_name("jaxzero"))
CHROMIUM = shutil.which("chromium")
CHROMEDRIVER = shutil.which("chromedriver")
MISSING = "needs Debian's chromium and chromium-driver: run `make system-deps`"
# Chromium as root in a container, with no network beyond this machine: no sandbox, no
# GPU, and none of its calls home (each one refused, many at a time, slows it down)
FLAGS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--window-size=1400,1000",
)


@contextlib.contextmanager
def served(game: str, *options: str) -> Iterator[str]:
    """`jaxzero board GAME --port 0 OPTIONS` running; its page's address. Stopped with
    Ctrl-C after, which must end it cleanly."""
    command = [JAXZERO, "board", game, "--port", "0", *options]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        if not line.startswith("board: "):
            process.kill()
            raise AssertionError(f"`jaxzero board` did not start: {line}{process.stderr.read()}")
        yield line.split()[1]
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=60)
        assert process.returncode == 0 and "Traceback" not in err, err
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


@contextlib.contextmanager
def browser() -> Iterator[webdriver.Chrome]:
    """Headless Chromium under chromedriver, in a profile of its own removed after."""
    assert CHROMIUM and CHROMEDRIVER, MISSING
    profile = tempfile.mkdtemp(prefix="jaxzero-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (*FLAGS, f"--user-data-dir={profile}"):
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def wait_ready(page: webdriver.Chrome, timeout: float = 120) -> None:
    """Wait until the page has drawn the server's answer to its last request."""
    WebDriverWait(page, timeout).until(
        lambda p: (
            p.find_element(By.TAG_NAME, "body").get_attribute("data-busy") == "0"
            and p.find_elements(By.CSS_SELECTOR, "#board svg")
        )
    )


def click_move(page: webdriver.Chrome, action: int) -> None:
    """Click the board's cell of ``action`` (or its button, for a move without a cell)
    with the mouse, and wait for the answer (the line moved on, or a message came)."""
    before = page.find_element(By.TAG_NAME, "body").get_attribute("data-cursor")
    found = f'#board [data-action="{action}"], #other-moves [data-action="{action}"]'
    target = page.find_element(By.CSS_SELECTOR, found)
    ActionChains(page).move_to_element(target).click().perform()
    WebDriverWait(page, 120).until(
        lambda p: (
            p.find_element(By.TAG_NAME, "body").get_attribute("data-cursor") != before
            or p.find_element(By.ID, "message").is_displayed()
        )
    )
    wait_ready(page)


def legal_cells(page: webdriver.Chrome, buttons: bool = False) -> list[int]:
    """The actions the board offers as cells to click (and, with ``buttons``, as buttons
    under it)."""
    found = "#board [data-action]" + (", #other-moves [data-action]" if buttons else "")
    cells = page.find_elements(By.CSS_SELECTOR, found)
    return [int(cell.get_attribute("data-action")) for cell in cells]


def text(page: webdriver.Chrome, element_id: str) -> str:
    return page.find_element(By.ID, element_id).text
