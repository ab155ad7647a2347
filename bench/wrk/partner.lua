-- partner.lua: the wrk script of partnergate's whole-gateway load benchmark
-- (scripts/loadbench.sh, docs/performance.md). Each request is a partner's link form post:
-- POST /partner/acme/url (or the URL's own path, if it has one), Content-Type: text/plain,
-- a link token as the body, taken in order from a file of tokens, one per line. A line
-- "PATH TOKEN" sends that token to PATH instead (loadbench -partners: each partner has its
-- own /partner/<name>/url).
--
--   wrk -t1 -c16 -d10s -s bench/wrk/partner.lua http://127.0.0.1:8080 -- TOKENS [fresh|repeat] [SKIP] [gated]
--
-- fresh (the default) sends every token at most once, since the gateway accepts each
-- token's nonce once. When the tokens run out the thread stops and says so; it never
-- replays a token. A fresh run needs one thread (-t1): threads do not share a position.
-- repeat cycles through the tokens, for the reverse_proxy baseline (no nonce is checked)
-- and for the unknown-kid flood (rejected anyway).
-- SKIP continues after a warmup run with the same file: a fresh run leaves out the first
-- SKIP tokens (the warmup spent them), a repeat run starts its cycle after them.
-- gated makes the thread wait, once its requests are built, for a line on standard input,
-- so that the caller can start several runs at the same moment (the valid load and the
-- unknown-kid flood) and sample CPU times right before.
--
-- Besides wrk's own summary, the script writes on standard output:
--   partner.lua: ready            when a gated thread has built its requests and waits
--   partner.lua: window           when a thread starts sending
--   partner.lua: tokens used up   when a fresh thread has run out of tokens and stops
-- and, from done(), one JSON line for bench/wrk.Read:
--   {"requests":N,"duration_us":N,"sent":N,"exhausted":N,"status":{"200":N,...},
--    "errors":{"connect":N,"read":N,"write":N,"timeout":N,"status":N},
--    "latency_us":{"p50":N,"p90":N,"p99":N,"max":N,"mean":N}}
-- requests, duration, errors and latency are wrk's (latency with wrk's correction for
-- coordinated omission); status counts the answers by HTTP status; sent is the number of
-- requests built (in a fresh run, the tokens spent); exhausted counts the requests asked
-- for after the tokens had run out.

local default_path = "/partner/acme/url"

-- Setup and done run in wrk's main Lua state: it keeps the threads to read their counts.
local threads = {}

function setup(thread)
   table.insert(threads, thread)
   thread:set("id", #threads)
end

-- Everything below up to done() runs in each thread's own Lua state.
local requests = {} -- the requests, pre-formatted by init so that request() only indexes
local n = 0         -- #requests
local i = 0         -- index of the last request handed out
local spent         -- a request without a token, returned only while the thread stops

local function fail(msg)
   io.stderr:write("partner.lua: ", msg, "\n")
   os.exit(2)
end

local function fresh()
   if i < n then
      i = i + 1
      sent = i
      return requests[i]
   end
   exhausted = exhausted + 1
   if exhausted == 1 then
      io.write("partner.lua: tokens used up\n")
      io.flush()
      wrk.thread:stop()
   end
   -- wrk writes whatever request() returns; the loop stops before any answer is read.
   return spent
end

local function cycle()
   i = i % n + 1
   sent = sent + 1
   return requests[i]
end

function init(args)
   local file, mode, skip, gate = args[1], args[2] or "fresh", tonumber(args[3] or "0"), args[4]
   if not file then
      fail("usage: wrk ... -s partner.lua URL -- TOKENS_FILE [fresh|repeat] [SKIP] [gated]")
   end
   if mode ~= "fresh" and mode ~= "repeat" then
      fail("mode " .. mode .. ": want fresh or repeat")
   end
   if not skip or skip < 0 or skip % 1 ~= 0 then
      fail("skip " .. tostring(args[3]) .. ": want a count of tokens")
   end
   if gate and gate ~= "gated" then
      fail("fourth argument " .. gate .. ": want gated or nothing")
   end
   local cut = mode == "fresh" and skip or 0
   if mode == "fresh" and id > 1 then
      fail("fresh tokens need one thread (-t1): each thread would send the same tokens")
   end

   local path = wrk.path ~= "/" and wrk.path or default_path
   wrk.headers["Content-Type"] = "text/plain"
   local f, err = io.open(file, "r")
   if not f then
      fail(err)
   end
   -- A request's head depends on the token only through its path and length (Content-Length), so
   -- wrk.format (a header table, string.format, a concat) runs once per length rather
   -- than per token: it would triple the time to build a file of 100,000 tokens.
   local heads = {}
   local seen = 0
   for line in f:lines() do
      if line:byte(-1) == 13 then
         line = line:sub(1, -2)
      end
      if line ~= "" then
         seen = seen + 1
         if seen > cut then
            local at, tok = path, line
            local sp = line:find(" ", 1, true)
            if sp then
               at, tok = line:sub(1, sp - 1), line:sub(sp + 1)
            end
            line = tok
            local len = #line
            local key = at .. " " .. len
            local head = heads[key]
            if not head then
               head = wrk.format("POST", at, nil, string.rep("x", len)):sub(1, -len - 1)
               heads[key] = head
            end
            n = n + 1
            requests[n] = head .. line
         end
      end
   end
   f:close()
   if n == 0 then
      fail(string.format("%s: no tokens after the first %d", file, cut))
   end
   if mode == "repeat" then
      i = skip % n
   end
   spent = wrk.format("POST", path, nil, "")

   statuses, sent, exhausted = {}, 0, 0
   request = mode == "fresh" and fresh or cycle
   if id == 1 then
      -- wrk calls the first thread's request() once before it starts, only to check the
      -- request's syntax (script_verify_request), and never sends it: that call must not
      -- spend a token.
      local run = request
      request = function()
         request = run
         return requests[1]
      end
   end

   if gate then
      io.write("partner.lua: ready\n")
      io.flush()
      io.read("*l")
   end
   io.write("partner.lua: window\n")
   io.flush()
end

function response(status)
   statuses[status] = (statuses[status] or 0) + 1
end

function done(summary, latency)
   local status, sent, exhausted = {}, 0, 0
   for _, thread in ipairs(threads) do
      for code, count in pairs(thread:get("statuses") or {}) do
         status[code] = (status[code] or 0) + count
      end
      sent = sent + (thread:get("sent") or 0)
      exhausted = exhausted + (thread:get("exhausted") or 0)
   end
   local codes = {}
   for code, count in pairs(status) do
      codes[#codes + 1] = string.format('"%d":%d', code, count)
   end
   table.sort(codes)
   local e = summary.errors
   local mean = latency.mean
   if mean ~= mean then
      mean = 0 -- no answers: wrk's mean is 0/0
   end
   io.write(string.format(
      '{"requests":%d,"duration_us":%d,"sent":%d,"exhausted":%d,"status":{%s},' ..
      '"errors":{"connect":%d,"read":%d,"write":%d,"timeout":%d,"status":%d},' ..
      '"latency_us":{"p50":%d,"p90":%d,"p99":%d,"max":%d,"mean":%.1f}}\n',
      summary.requests, summary.duration, sent, exhausted, table.concat(codes, ","),
      e.connect, e.read, e.write, e.timeout, e.status,
      latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max, mean))
   io.flush()
end
