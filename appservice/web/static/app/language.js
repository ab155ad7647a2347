// The language picker of the shell (#language): the choice is saved for the account, then
// the page loads again in it, without a culture parameter that would override it.

import { api } from "./api.js";
import { showNotice } from "./chrome.js";
import { errorText } from "./errors.js";

export function installLanguagePicker() {
  const picker = document.getElementById("language");
  if (!picker) return;
  picker.addEventListener("change", async () => {
    picker.disabled = true;
    try {
      await api.setLanguage(picker.value);
      const next = new URL(window.location.href);
      next.searchParams.delete("culture");
      window.location.replace(next.href);
    } catch (e) {
      picker.disabled = false;
      showNotice(errorText(e));
    }
  });
}
