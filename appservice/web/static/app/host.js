// Host events: a desktop wrapper that shows the application injects window.svcHost, a
// function taking one JSON string (chromedp's ExposeFunc makes exactly such a function).
// Without a host the page works the same.

// emit tells the host that event happened; whatever the host throws is its own business.
export function emit(event, data = {}) {
  const host = window.svcHost;
  if (typeof host !== "function") return;
  try {
    const r = host(JSON.stringify({ event, data }));
    if (r && typeof r.catch === "function") r.catch(() => {});
  } catch {
    // ignored: a failing host must not break the page
  }
}
