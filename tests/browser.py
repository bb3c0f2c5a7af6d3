"""Debian's chromium, headless, driven by chromium-driver through
python3-selenium, for the console's browser tests (console_browser.py,
console_groups.py, console_row.py): start(DIR, PROFILE, SIZE) gives the
driver and a 20 s wait; screenshots go to DIR/screenshots, the driver's
log to DIR/chromedriver.log.
"""
import os

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.support.ui import WebDriverWait


def start(out, profile, size):
    """The driver and its wait, a profile of its own under out."""
    os.makedirs(out + "/screenshots", exist_ok=True)
    opts = webdriver.ChromeOptions()
    # As root, headless, with the network closed: no sandbox, no GPU,
    # nothing that calls out (it would fail, and slow every page).
    for flag in ("--headless", "--no-sandbox", "--disable-gpu",
                 "--disable-quic", "--no-first-run",
                 "--disable-background-networking",
                 "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage", "--window-size=" + size,
                 "--user-data-dir=" + out + "/" + profile):
        opts.add_argument(flag)
    opts.binary_location = "/usr/bin/chromium"
    driver = webdriver.Chrome(
        service=Service("/usr/bin/chromedriver",
                        log_path=out + "/chromedriver.log"),
        options=opts)
    driver.set_page_load_timeout(30)
    return driver, WebDriverWait(driver, 20)
