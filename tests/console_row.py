"""Rows' pages in a real browser (as console_groups.py): logs in as the
operator alice and reaches each row's page by the links the console
gives (the failed rows, the next rows, the workers) or its find box:
prints one JSON object a page read, {"page": NAME, ...what it shows}.
Requeues the failed row whose n is 30 by its page's button, searches
the rows by three columns (printing the n of each row found), and discards
the failed binary row by its own, printing the page each lands on.
Saves screenshots.  Usage: console_row.py URL DIR.  An alert fails it.
"""
import json
import os
import sys
import time

from selenium import webdriver
from selenium.common.exceptions import WebDriverException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec
from selenium.webdriver.support.ui import Select, WebDriverWait

url, out = sys.argv[1:3]
os.makedirs(out + "/screenshots", exist_ok=True)
opts = webdriver.ChromeOptions()
for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
             "--no-first-run", "--disable-background-networking",
             "--disable-component-update", "--disable-sync",
             "--disable-dev-shm-usage", "--window-size=1280,1000",
             "--user-data-dir=" + out + "/profile-row"):
    opts.add_argument(flag)
opts.binary_location = "/usr/bin/chromium"
driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver",
                                          log_path=out + "/chromedriver.log"),
                          options=opts)
driver.set_page_load_timeout(30)
wait = WebDriverWait(driver, 20)

# What a row's page shows, read in one script (a running row's page
# reloads itself): None until it is there.
READ = """
    var st = document.getElementById("state");
    if (!st) return null;
    function cells(id) {
        var t = document.getElementById(id);
        if (!t || t.tagName !== "TABLE") return null;
        return Array.from(t.rows).map(function (tr) {
            return Array.from(tr.cells).map(function (c) {
                return c.textContent; }); });
    }
    var hex = document.getElementById("key-hex");
    var did = document.getElementById("did");
    var runs = cells("runs");
    return {state: st.textContent,
            key: document.getElementById("key").textContent,
            key_hex: hex ? hex.textContent : null,
            url: location.pathname + location.search,
            running: document.getElementById("running").textContent,
            select: cells("select"), failed: cells("failed"),
            runs: runs ? runs.slice(1) : null,
            did: did ? did.textContent : null,
            requeue: !!document.getElementById("requeue"),
            discard: !!document.getElementById("discard")};
"""


def read(name):
    for _ in range(40):
        try:
            page = driver.execute_script(READ)
        except WebDriverException:
            page = None
        if page is not None:
            page["page"] = name
            print(json.dumps(page), flush=True)
            return page
        time.sleep(0.25)
    sys.exit("the row page %s could not be read" % name)


def link_in(table_id, row_text):
    """The row link of the row of table table_id with a cell row_text."""
    xpath = ('//table[@id="%s"]//tr[td[normalize-space(.)="%s"]]'
             '//a[@class="row"]' % (table_id, row_text))
    return wait.until(ec.presence_of_element_located((By.XPATH, xpath)))


def queue(name):
    driver.get(url + "/")
    wait.until(ec.presence_of_element_located((By.ID, "queues")))
    driver.find_element(By.LINK_TEXT, name).click()
    wait.until(ec.presence_of_element_located((By.ID, "figures")))


try:
    driver.get(url + "/")
    wait.until(ec.presence_of_element_located((By.ID, "login")))
    driver.find_element(By.ID, "user").send_keys("alice")
    driver.find_element(By.ID, "password").send_keys("alice-password")
    driver.find_element(By.ID, "login").click()
    wait.until(ec.presence_of_element_located((By.ID, "queues")))

    # The waiting row, from the queue's next rows; the running one, from
    # its worker; the done one, by the find box.
    queue("jobs")
    link_in("next", "50").click()
    read("waiting")
    queue("jobs")
    driver.save_screenshot(out + "/screenshots/console-row-queue.png")
    link_in("workers", "slow").click()
    read("running")
    queue("jobs")
    driver.find_element(By.ID, "find-key").send_keys("done-row")
    driver.find_element(By.ID, "find-key").submit()
    read("done")

    # The failed rows: 'victim' and 'victim' CHAR(1), which looks alike.
    driver.get(url + "/queue/jobs/failed")
    link_in("failed", "20").click()
    read("victim")
    driver.get(url + "/queue/jobs/failed")
    link_in("failed", "30").click()
    read("planted")
    driver.save_screenshot(out + "/screenshots/console-row-failed.png")
    driver.find_element(By.ID, "requeue").click()
    wait.until(ec.presence_of_element_located((By.ID, "did")))
    read("planted-requeued")
    driver.save_screenshot(out + "/screenshots/console-row-requeued.png")

    # The search, from the row page's link: a column the select's table
    # indexes, the key, and one it does not (a bounded scan).
    driver.find_element(By.ID, "search-link").click()
    for column, value in (("n", "50"), ("k", "slow"), ("attempts", "0")):
        wait.until(ec.presence_of_element_located((By.ID, "search-value")))
        Select(driver.find_element(By.ID, "search-column")) \
            .select_by_value(column)
        driver.find_element(By.ID, "search-value").clear()
        driver.find_element(By.ID, "search-value").send_keys(value)
        driver.find_element(By.ID, "search-go").click()
        # The last search's page has a search-how too: wait for this one.
        wait.until(ec.url_contains("column=%s&value=%s" % (column, value)))
        how = wait.until(ec.presence_of_element_located((By.ID, "search-how")))
        found = driver.execute_script("""
            return Array.from(document.getElementById("found").rows)
                .slice(1).map(function (tr) {
                    return tr.cells[1].textContent; });""")
        print(json.dumps({"page": "search " + column, "how": how.text,
                          "n": found, "url": driver.current_url}), flush=True)
    driver.save_screenshot(out + "/screenshots/console-row-search.png")
    link_in("found", "50").click()
    read("from-search")

    # The binary keys: the failed one from the failed rows, discarded
    # from its page; the done one, its prefix, by its bytes.
    driver.get(url + "/queue/bk/failed")
    link_in("failed", "70").click()
    read("binary")
    driver.find_element(By.ID, "discard").click()
    wait.until(ec.presence_of_element_located((By.ID, "did")))
    read("binary-discarded")
    queue("bk")
    driver.find_element(By.ID, "find-key").send_keys("00ff0a")
    driver.find_element(By.ID, "find-hex").click()
    driver.find_element(By.ID, "find-key").submit()
    read("binary-done")
    queue("bk")
    link_in("workers", "ff01").click()
    read("binary-running")
    if driver.find_elements(By.TAG_NAME, "script")[:-1]:
        sys.exit("a value became a script element")
    print("ok")
finally:
    driver.quit()
