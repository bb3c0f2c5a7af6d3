"""A real browser in the console: Debian's chromium, headless, driven by
chromium-driver through python3-selenium.  Logs in, opens the Queues page
and a queue's, saves a screenshot of each, opens the failed rows, selects
the row KEY and requeues it by clicking, and checks that it is gone from
the list.  Usage: console_browser.py URL KEY DIR; prints one line per step.
"""
import sys

from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions as ec

import browser

url, key, out = sys.argv[1], sys.argv[2], sys.argv[3]
driver, wait = browser.start(out, "profile", "1280,900")
try:
    driver.get(url + "/")
    wait.until(ec.presence_of_element_located((By.ID, "login")))
    print("sent to the login form:", driver.current_url)
    driver.find_element(By.ID, "user").send_keys("alice")
    driver.find_element(By.ID, "password").send_keys("alice-password")
    driver.find_element(By.ID, "login").click()
    wait.until(ec.presence_of_element_located((By.ID, "queues")))
    print("logged in, the queues page")
    driver.save_screenshot(out + "/screenshots/console-queues.png")
    driver.find_element(By.LINK_TEXT, "email").click()
    wait.until(ec.presence_of_element_located((By.ID, "figures")))
    print("the queue page")
    driver.save_screenshot(out + "/screenshots/console-queue.png")
    driver.find_element(By.ID, "failed-link").click()
    # A row's box posts its key's bytes in hex, not the text shown.
    box_css = 'input[name=key_hex][value="%s"]' % key.encode().hex()
    box = wait.until(ec.presence_of_element_located(
        (By.CSS_SELECTOR, box_css)))
    print("the failed rows, row", key, "among them")
    box.click()
    driver.find_element(By.ID, "requeue").click()
    note = wait.until(ec.presence_of_element_located((By.ID, "did")))
    print("after the click:", note.text)
    if driver.find_elements(By.CSS_SELECTOR, box_css):
        sys.exit("row %s is still in the failed list" % key)
    print("row", key, "is gone from the failed list")
    driver.save_screenshot(out + "/screenshots/console-failed.png")
    # A row's <script> is text: no alert opened, and the text is there.
    if "<script>alert(1)</script>" not in driver.page_source.replace(
            "&lt;", "<").replace("&gt;", ">"):
        sys.exit("the row with a <script> is not shown")
    driver.find_element(By.LINK_TEXT, "Daemons").click()
    wait.until(ec.presence_of_element_located((By.ID, "daemons")))
    print("the daemons page")
    driver.save_screenshot(out + "/screenshots/console-daemons.png")
    driver.find_element(By.LINK_TEXT, "Actions").click()
    wait.until(ec.presence_of_element_located((By.ID, "actions")))
    if "1002" not in driver.find_element(By.ID, "actions").text:
        sys.exit("the actions page does not list the requeue")
    print("the actions page lists the requeue")
    print("ok")
finally:
    driver.quit()
