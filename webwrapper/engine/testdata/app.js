// A stand-in for the application's window.svcApp and its host events. It runs in <head>,
// so the first emit proves that window.svcHost exists before the page's scripts run.
class SvcAppError extends Error {
  constructor({ code, message, fields = [], status = 0 }) {
    super(message);
    this.name = "SvcAppError";
    this.code = code;
    this.fields = fields;
    this.status = status;
  }
}

function emit(event, data = {}) {
  if (typeof window.svcHost !== "function") return false;
  window.svcHost(JSON.stringify({ event, data }));
  return true;
}

window.svcApp = Object.freeze({
  version: 1,
  add: async (a, b) => a + b,
  echo: async (v) => v,
  nothing: async () => undefined,
  fail: async () => {
    throw new SvcAppError({
      code: "invalid_argument", message: "firstname: is required",
      fields: [{ field: "firstname", reason: "is required" }], status: 400,
    });
  },
  throwString: () => Promise.reject("plain"),
  emitMany: async (n) => {
    for (let i = 0; i < n; i++) emit("count", { i });
    return n;
  },
  env: async () => ({
    dpr: window.devicePixelRatio, lang: navigator.language, visibility: document.visibilityState,
  }),
});

emit("ready", { page: location.pathname, hostBeforeScripts: typeof window.svcHost === "function" });
