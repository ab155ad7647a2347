// window.svcApp: the JavaScript API a desktop wrapper (or any host page script) drives the
// application through. It is the counterpart of the original wrapper's internal COM
// interface and calls nothing but the JSON API the views use. Every function returns a
// Promise; a failure rejects with SvcAppError {name, code, message, fields, status}.

import { api, invalid, maxCaseId, query, SvcAppError } from "./api.js";
import { state } from "./state.js";
import * as actions from "./actions.js";
import { showNotice } from "./chrome.js";
import { navigate, refresh } from "./router.js";

function id(name, v) {
  const n = Number(v);
  if (!Number.isSafeInteger(n) || n <= 0) throw invalid(name, "must be a positive integer");
  return n;
}

// install defines window.svcApp; its functions wait for ready (the first status answer).
export function install(ready) {
  const run = (fn) => ready.then(() => fn()).catch((e) => {
    throw e instanceof SvcAppError ? e : new SvcAppError({ code: "internal_error", message: String((e && e.message) || e) });
  });

  // instructor wraps a function for instructors only: in Go (the member shell) it rejects
  // as the API would, before showing an instructor's view there.
  const instructor = (fn) => (...args) => run(() => {
    if (state.role !== "instructor") {
      throw new SvcAppError({ code: "role_forbidden", message: "Only an instructor can do this.", status: 403 });
    }
    return fn(...args);
  });

  const svcApp = Object.freeze({
    version: 1,

    status: () => run(async () => actions.publicStatus(await actions.refreshStatus())),

    selectPerson: instructor((args) => {
      if (!args || typeof args !== "object" || Array.isArray(args)) throw invalid("args", "must be an object");
      return actions.selectPerson(args);
    }),

    queryExercises: instructor(async (text = "") => {
      const q = String(text ?? "");
      const { exercises = [] } = await api.exercises({ q });
      await navigate(`/app/exercises${query({ q })}`, { data: exercises });
      return exercises;
    }),

    queryWorkouts: instructor(async (text = "") => {
      const q = String(text ?? "");
      const { workouts = [] } = await api.workouts({ q });
      await navigate(`/app/workouts${query({ q })}`, { data: workouts });
      return workouts;
    }),

    getWorkoutsForClient: instructor(async ({ customId = "", userId = 0, from = "" } = {}) => {
      if (!customId && !userId) throw invalid("customId", "customId or userId is required");
      const params = { customId: customId ? String(customId) : "", personId: userId ? id("userId", userId) : "", from: from ? String(from) : "" };
      return (await api.workouts(params)).workouts || [];
    }),

    openWorkout: (workoutId) => run(async () => {
      const w = await api.workout(id("id", workoutId));
      await navigate(actions.workoutPath(w.id), { data: w });
      return w;
    }),

    createWorkout: instructor(({ personId, templateId = 0, title = "" } = {}) => {
      const person = personId ?? (state.status && state.status.person && state.status.person.id);
      if (!person) throw invalid("personId", "no person given and none in focus");
      return actions.createWorkout({ personId: id("personId", person), templateId: templateId ? id("templateId", templateId) : 0, title });
    }),

    getListOfUsers: instructor(async ({ customId = "" } = {}) => (await api.persons({ customId: String(customId || "") })).persons || []),

    setCustomId: instructor(async (userId, customId) => {
      if (typeof customId !== "string") throw invalid("customId", "must be a string");
      const p = await api.setCustomId(id("userId", userId), customId);
      const path = window.location.pathname;
      if (path === "/app" || path.startsWith("/app/persons")) {
        await actions.refreshStatus().catch(() => {});
        await refresh();
      }
      return p;
    }),

    setCase: instructor(async (caseId) => {
      if (typeof caseId !== "string") throw invalid("caseId", "must be a string");
      if ([...caseId].length > maxCaseId) throw invalid("caseId", `at most ${maxCaseId} characters`);
      return actions.publicStatus(await actions.setCase(caseId));
    }),

    exportWorkout: instructor(async ({ workoutId, caseId = "" } = {}) => {
      const wid = workoutId ?? (state.openWorkout && state.openWorkout.id);
      if (!wid) throw invalid("workoutId", "no workout given and none open");
      const e = await actions.exportWorkout(id("workoutId", wid), String(caseId || ""));
      document.getElementById("export")?.dispatchEvent(new CustomEvent("exported", { detail: e }));
      return e;
    }),

    signOut: () => run(async () => { const f = document.getElementById("signout-form"); if (f) { await fetch(f.action, { method: "POST", body: new URLSearchParams(new FormData(f)), redirect: "manual" }); f.dispatchEvent(new Event("submit")); } }),

    showNotice: (text, url) => run(() => {
      showNotice(text, url);
      return undefined;
    }),
  });

  Object.defineProperty(window, "svcApp", { value: svcApp, enumerable: true });
  return svcApp;
}
