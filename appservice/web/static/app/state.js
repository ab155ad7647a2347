// What the page knows about its session, shared by the views and window.svcApp.

export const state = {
  role: document.querySelector('meta[name="app-role"]')?.content || "instructor",
  // status is the last GET /app/api/status answer (null until it came).
  status: null,
  // openWorkout is the workout the editor or the plan view shows, for exportWorkout.
  openWorkout: null,
};

// personName is a person's display name.
export function personName(p) {
  if (!p) return "";
  return p.name || [p.firstname, p.middlename, p.lastname].filter(Boolean).join(" ");
}
