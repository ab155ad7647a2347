// What the views and window.svcApp both do: each change goes through the JSON API, then
// the session state, the focus bar, the host and the view follow.

import { api, setCSRFToken } from "./api.js";
import { state } from "./state.js";
import { renderFocus } from "./chrome.js";
import { emit } from "./host.js";
import { navigate } from "./router.js";

// setStatus keeps a status answer and shows it.
function setStatus(st) {
  state.status = st;
  setCSRFToken(st && st.csrfToken);
  renderFocus(st);
  return st;
}

export async function refreshStatus() {
  return setStatus(await api.status());
}

// publicStatus is the status as window.svcApp hands it out.
export function publicStatus(st) {
  const { signedIn, role = "", account = null, organization = null, person = null, caseId = "" } = st || {};
  return { signedIn: Boolean(signedIn), role, account, organization, person, caseId };
}

// focusPerson makes personId the session's person in focus.
export async function focusPerson(personId) {
  const st = setStatus(await api.setSessionPerson(personId));
  emit("personSelected", { person: st.person });
  return st;
}

// selectPerson runs the wrapper's selectperson and shows the person.
export async function selectPerson(args) {
  const res = await api.selectPerson(args);
  await refreshStatus().catch(() => {});
  emit("personSelected", { person: res.person });
  await navigate(`/app/persons/${encodeURIComponent(res.person.id)}`, { data: res });
  return res;
}

// createWorkout creates a plan (from a template when templateId is set) and opens it.
export async function createWorkout({ personId, templateId, title } = {}) {
  const body = { personId: Number(personId) || 0, templateId: Number(templateId) || 0 };
  if (title) body.title = String(title);
  const w = await api.createWorkout(body);
  await navigate(`/app/workouts/${encodeURIComponent(w.id)}`, { data: w });
  return w;
}

// workoutPath is where a workout is shown for the page's role.
export function workoutPath(id) {
  return `${state.role === "member" ? "/go" : "/app"}/workouts/${encodeURIComponent(id)}`;
}

// workoutShown records the workout a view shows and tells the host.
export function workoutShown(w) {
  state.openWorkout = w;
  emit("workoutOpened", { workout: w });
}

export async function setCase(caseId) {
  return setStatus(await api.setSessionCase(String(caseId)));
}

// exportWorkout archives workoutId as a PDF under caseId (the session's case when empty).
export function exportWorkout(workoutId, caseId) {
  return api.exportWorkout(workoutId, caseId);
}
