"""The console's group view in a real browser (as console_browser.py):
logs in as USER, opens the queue's page, reads the table of its groups
and prints it as JSON, one row a list of its cells, then the note of the
groups left out; saves a screenshot.  Usage: console_groups.py URL USER
QUEUE DIR.  An alert (a row's value run as script) fails it.
"""
import json
import sys
import time

from selenium.common.exceptions import WebDriverException
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec

import browser

url, user, queue, out = sys.argv[1:5]
driver, wait = browser.start(out, "profile-groups", "1280,1400")
try:
    driver.get(url + "/")
    wait.until(ec.presence_of_element_located((By.ID, "login")))
    driver.find_element(By.ID, "user").send_keys(user)
    driver.find_element(By.ID, "password").send_keys(user + "-password")
    driver.find_element(By.ID, "login").click()
    wait.until(ec.presence_of_element_located((By.ID, "queues")))
    driver.find_element(By.LINK_TEXT, queue).click()
    wait.until(ec.presence_of_element_located((By.ID, "groups")))
    # The page reloads itself every few seconds: read it in one script,
    # again if a reload came in between.
    read = """
        var t = document.getElementById("groups");
        var note = document.getElementById("groups-left-out");
        if (!t || !note) return null;
        document.getElementById("groups-heading").scrollIntoView();
        var rows = [];
        for (var tr of Array.from(t.rows).slice(1))
            rows.push(Array.from(tr.cells).map(function (td) {
                return td.textContent; }));
        return {rows: rows, note: note.textContent,
                scripts: t.getElementsByTagName("script").length};
    """
    page = None
    for _ in range(20):
        try:
            page = driver.execute_script(read)
        except WebDriverException:
            page = None
        if page is not None:
            break
        time.sleep(0.25)
    if page is None:
        sys.exit("the group table could not be read")
    driver.save_screenshot(out + "/screenshots/console-groups.png")
    print(json.dumps(page["rows"]))
    print(page["note"])
    # Nothing a row holds became markup: no <script> in the table itself.
    if page["scripts"]:
        sys.exit("a group's value became a script element")
    print("ok")
finally:
    driver.quit()
