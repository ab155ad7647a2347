// The single-page application's entry module: plain ES modules served as they are (see
// docs/appservice.md). It routes the shell's view paths, loads the session's status,
// installs window.svcApp and tells a host what happened.

import { onSessionEnded } from "./api.js";
import { state } from "./state.js";
import { refreshStatus } from "./actions.js";
import { highlight } from "./chrome.js";
import { emit } from "./host.js";
import { h, replace } from "./dom.js";
import { install } from "./svcapp.js";
import { route, setNotFound, onRender, start } from "./router.js";
import { focusView, personView } from "./views/person.js";
import { personsView } from "./views/persons.js";
import { exercisesView, exerciseView } from "./views/exercises.js";
import { workoutsView, templatesView } from "./views/workouts.js";
import { editorView } from "./views/editor.js";
import { caseView } from "./views/case.js";
import { devicesView } from "./views/devices.js";
import { myPlansView, memberPlanView } from "./views/member.js";
import { endedView } from "./views/ended.js";
import { t } from "./i18n.js";
import { installLanguagePicker } from "./language.js";
import { installOffline, forgetOffline } from "./offline.js";

if (state.role === "member") {
  route("/go", myPlansView);
  route("/go/workouts/:id", memberPlanView);
} else {
  route("/app", focusView);
  route("/app/persons", personsView);
  route("/app/persons/:id", personView);
  route("/app/exercises", exercisesView);
  route("/app/exercises/:id", exerciseView);
  route("/app/workouts", workoutsView);
  route("/app/workouts/:id", editorView);
  route("/app/templates", templatesView);
  route("/app/cases/:caseId", caseView);
  route("/app/devices", devicesView);
}
setNotFound(() => h("section", { class: "card", id: "not-found" }, h("h1", {}, t("app.not_found")), h("p", {}, t("app.no_such_page"))));
onRender(highlight);

let ended = false;
let signedOutSent = false;

// signedOut tells the host, once, that the page has no session: reason "signout" when the
// person signed out, "ended" when the session ended by itself (a desktop wrapper keeps its
// device sign-on then, and signs the window in again).
function signedOut(reason) {
  if (signedOutSent) return;
  signedOutSent = true;
  emit("signedOut", { reason });
}

// sessionEnded replaces the application with the "session ended" view, once.
function sessionEnded() {
  if (ended) return;
  ended = true;
  state.status = { signedIn: false };
  for (const sel of ["#nav", "#focus", ".who"]) {
    const el = document.querySelector(sel);
    if (el) el.hidden = true;
  }
  replace(document.getElementById("view"), endedView(state.role));
  signedOut("ended");
  // Nothing of the member whose session ended stays readable offline.
  forgetOffline().catch(() => {});
}
onSessionEnded(sessionEnded);

async function boot() {
  if (document.querySelector('meta[name="app-signed-in"]')?.content !== "true") {
    // The server rendered the "session ended" view already.
    ended = true;
    state.status = { signedIn: false };
    return;
  }
  try {
    await refreshStatus();
  } catch {
    // session_required shows the ended view; anything else leaves the server-rendered
    // header and lets each view report its own failure.
  }
  if (state.status && state.status.signedIn === false) {
    sessionEnded();
    return;
  }
  document.getElementById("signout-form")?.addEventListener("submit", () => signedOut("signout"));
  installLanguagePicker();
  await start().catch(() => {});
  if (state.role === "member") installOffline().catch(() => {});
}

// The module runs async, so that DOMContentLoaded does not wait for the module graph
// (DevTools clients, the browser tests among them, re-read the document at that event);
// the views need the whole shell parsed.
const parsed = document.readyState === "loading"
  ? new Promise((resolve) => document.addEventListener("DOMContentLoaded", resolve, { once: true }))
  : Promise.resolve();
const ready = parsed.then(boot);
install(ready);
ready.then(() => {
  emit("ready", { version: 1 });
  if (ended) signedOut("ended");
  else if (state.status) emit("signedIn", { account: state.status.account, organization: state.status.organization });
});
