// The JSON API under /app/api/: the one way in for the views and for window.svcApp alike.

// SvcAppError is every failure the application reports: the API's problem code and fields
// (see docs/appservice.md), or a check made here before calling it.
export class SvcAppError extends Error {
  constructor({ code, message, fields = [], status = 0 }) {
    super(message || code);
    this.name = "SvcAppError";
    this.code = code;
    this.fields = fields;
    this.status = status;
  }

  // toJSON keeps code and fields when a host serializes the error.
  toJSON() {
    return { name: this.name, code: this.code, message: this.message, fields: this.fields, status: this.status };
  }
}

// maxCaseId bounds a case id as the partner link's caseId (linkspec.MaxIDLength), maxCustomId
// a person's custom id as the API does (personspec.MaxText); TestBounds pins both.
export const maxCaseId = 256;
export const maxCustomId = 256;

// invalid is a client-side argument check failing the way the API would.
export function invalid(field, reason) {
  return new SvcAppError({ code: "invalid_argument", message: `${field}: ${reason}`, fields: [{ field, reason }], status: 400 });
}

let csrf = document.querySelector('meta[name="csrf-token"]')?.content || "";
let sessionEnded = () => {};

// onSessionEnded registers what happens when a call answers session_required.
export function onSessionEnded(fn) {
  sessionEnded = fn;
}

// setCSRFToken takes a fresh token from the status answer.
export function setCSRFToken(token) {
  if (token) csrf = token;
}

// query turns an object into "?a=b" without empty members: the API's queries, and the view
// addresses svcApp navigates to.
export function query(params) {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params || {})) {
    if (v !== undefined && v !== null && v !== "" && v !== false) q.set(k, String(v));
  }
  const s = q.toString();
  return s ? `?${s}` : "";
}

// request calls the API and returns the decoded JSON answer, or throws SvcAppError.
async function request(method, path, { params, body } = {}) {
  const headers = { Accept: "application/json" };
  const init = { method, headers, credentials: "same-origin", cache: "no-store" };
  if (method !== "GET") headers["X-CSRF-Token"] = csrf;
  if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let res;
  try {
    res = await fetch(`/app/api/${path}${query(params)}`, init);
  } catch (e) {
    throw new SvcAppError({ code: "unavailable", message: "The service cannot be reached. Check the connection and try again.", status: 0 });
  }
  const type = res.headers.get("Content-Type") || "";
  const data = type.includes("json") ? await res.json().catch(() => null) : null;
  if (res.ok) return data;
  const p = data || {};
  const err = new SvcAppError({
    code: p.code || (res.status === 404 ? "not_found" : "internal_error"),
    message: p.detail || p.title || `HTTP ${res.status}`,
    fields: Array.isArray(p.fields) ? p.fields : [],
    status: res.status,
  });
  if (err.code === "session_required") sessionEnded();
  throw err;
}

const enc = encodeURIComponent;

// The routes of the JSON API, one function each.
export const api = {
  status: () => request("GET", "status"),
  exercises: (q) => request("GET", "exercises", { params: q }),
  exercise: (id) => request("GET", `exercises/${enc(id)}`),
  workouts: (q) => request("GET", "workouts", { params: q }),
  workout: (id) => request("GET", `workouts/${enc(id)}`),
  createWorkout: (body) => request("POST", "workouts", { body }),
  updateWorkout: (id, body) => request("PUT", `workouts/${enc(id)}`, { body }),
  persons: (q) => request("GET", "persons", { params: q }),
  person: (id) => request("GET", `persons/${enc(id)}`),
  selectPerson: (args) => request("POST", "persons/select", { body: args }),
  setCustomId: (id, customId) => request("PUT", `persons/${enc(id)}/customId`, { body: { customId } }),
  setSessionPerson: (personId) => request("PUT", "session/person", { body: { personId } }),
  setSessionCase: (caseId) => request("PUT", "session/case", { body: { caseId } }),
  setLanguage: (language) => request("PUT", "me/language", { body: { language } }),
  exportWorkout: (id, caseId) => request("POST", `workouts/${enc(id)}/export`, { body: caseId ? { caseId } : {} }),
  caseExports: (caseId) => request("GET", `cases/${enc(caseId)}/exports`),
  myWorkouts: () => request("GET", "me/workouts"),
  devices: () => request("GET", "me/devices"),
  revokeDevice: (id) => request("POST", `me/devices/${enc(id)}/revoke`, { body: {} }),
};
