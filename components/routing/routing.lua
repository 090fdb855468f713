-- TFRS API routing: Envoy HTTP Lua filters on the Istio ingress gateway (LuaJIT, Lua 5.1).
--
-- THE RULE THAT WINS: a routing value comes from exactly one place.
--
--   Each of X-TF-Namespace, X-TF-RobotId, X-TF-RobotType (and the caller's token) may be given
--   once: as a header, or as a cookie of the same name (any case), or as both with the same
--   value. Anything else is ambiguous and answered 400 with a constant message, before any
--   header is changed or any upstream is called:
--     - a routing header given more than once (as separate entries; one joined with ',' by a
--       proxy is a single invalid value);
--     - a routing cookie or adminToken given more than once in the Cookie header(s), in any
--       case and any order, whether Envoy joined repeated Cookie headers with '; ' or ',';
--     - a header and a cookie of the same name with different values (an empty header counts);
--     - more than one Authorization header, or an adminToken cookie whose "Bearer <token>"
--       differs from the Authorization header;
--     - a name that is a routing or adminToken name in another spelling: a header or cookie
--       name that equals one after lowercasing, percent-decoding and dropping every byte
--       outside [a-z0-9] ("x_tf_namespace", "x-tf-namespace =", "x%2Dtf-namespace",
--       "x-tf-<zero-width space>namespace") but is not it, and a routing or adminToken cookie
--       hidden after a ',' ("a=1, x-tf-namespace=b") or in a nameless cookie
--       ("=x-tf-namespace=b"). A backend that folds or splits names differently from the
--       gateway would otherwise read a value the gateway never checked.
--   Cookie syntax: pairs are separated by ';'; a routing cookie is a whole pair "name=value",
--   the name exact up to case, no spaces around '=', the value everything after the first '='
--   up to the next ';' (so ',', '=', quotes, spaces and any other byte stay in the value and
--   make it invalid). A value is valid only if it is a DNS label fragment (below); no decoding
--   of any kind is applied, so percent-encoding and unicode lookalikes are never valid.
--
-- One source, two filters. The Go package routing renders this file twice, filling the
-- @...@ placeholders below; ENTRY picks what the filter does:
--
--   "cookies" (EnvoyFilter envoyfilter-cookie, runs first): resolve (below). A browser cannot
--             set custom headers on navigations and WebSocket upgrades, so it may carry the
--             routing values as cookies.
--   "route"   (EnvoyFilter envoyfilter-lua-routing, runs second): resolve again (a no-op after
--             the cookie filter; it makes the route filter safe on its own), then the routing
--             contract. Each value must match ^[a-z0-9-]+$, be 1..63 bytes and start and end
--             with [a-z0-9]; the robot type has no '-'; "<robotType>-<robotId>-api" must fit a
--             DNS label; the namespace must not be reserved (kube-*, the platform's namespaces,
--             the cluster's spec.reservedNamespaces: rendered by the cluster stack from the
--             facts the tenant reservation uses). Else 400. Otherwise it sets
--               x-tf-upstream         = <robotType>-<robotId>-api.<namespace>.svc.<cluster domain>
--               x-tf-upstream-cluster = outbound|<port>||<x-tf-upstream>
--             The VirtualService route "tfrs-api" takes its cluster from x-tf-upstream-cluster
--             (Envoy cluster_header), so a request not validated here never reaches an
--             upstream chosen by the client, and a Service that does not exist is no cluster
--             (Envoy answers 503).
--
-- resolve: after the checks above, a routing cookie whose header is absent becomes the header;
-- an adminToken cookie becomes "Authorization: Bearer <token>" (RFC 6750 token characters
-- only, else 400); then every routing cookie and adminToken is removed from the Cookie header
-- sent upstream. The upstream reads routing values and the token from one place each (the
-- X-TF-* headers, Authorization), so no robot can parse the cookies differently, and no robot
-- receives the user's token as a cookie it could mistake for, or replay as, its own.
--
-- Responses (both filters, every host): a Set-Cookie whose cookie name is a routing name or
-- adminToken (any spelling, as above, including a nameless cookie whose value starts with one)
-- is dropped; other Set-Cookies pass unchanged and in order. Only the front end's own scripts
-- set these cookies, so no robot can plant routing cookies or a token in a user's browser.
--
-- Requests for other hosts pass untouched, except that both filters strip x-tf-upstream and
-- x-tf-upstream-cluster from every request, because only the route filter may set them.
--
-- Go twin: routing.UpstreamHost / routing.Validate / Targets.Validate. routing_gen_test.go
-- runs this file under gopher-lua on generated requests and fails if the two ever disagree. Envoy
-- stream-handle API used: headers():get/replace/add/remove, pairs(headers()) (every entry,
-- repeated headers as separate entries; iteration always completes before any change, as
-- Envoy requires), respond. Counting entries with pairs does not depend on whether this
-- Envoy's get() joins repeated headers with ',' or returns only the first.

local API_HOST = "@API_HOST@"
local ENTRY = "@ENTRY@"
local SERVICE_SUFFIX = "@SERVICE_SUFFIX@"
local CLUSTER_DOMAIN = "@CLUSTER_DOMAIN@"
local UPSTREAM_PORT = "@UPSTREAM_PORT@"
local MAX_LABEL = 63

-- Namespaces that are never a tenant's (rendered by the cluster stack; empty in the cookie
-- filter, which never routes).
local RESERVED_NAMES = { "@RESERVED_NAMES@" }
local RESERVED_PREFIXES = { "@RESERVED_PREFIXES@" }

local UPSTREAM_HEADER = "x-tf-upstream"
local UPSTREAM_CLUSTER_HEADER = "x-tf-upstream-cluster"
local AUTHORIZATION = "authorization"
local COOKIE = "cookie"
local SET_COOKIE = "set-cookie"
local ADMIN_TOKEN_COOKIE = "admintoken"

-- The routing values in the order they are checked; name is lowercase (Envoy's header keys;
-- cookie names are compared lowercase), display is what error messages say.
local ROUTING = {
  { key = "namespace", name = "x-tf-namespace", display = "X-TF-Namespace" },
  { key = "robot_id", name = "x-tf-robotid", display = "X-TF-RobotId" },
  { key = "robot_type", name = "x-tf-robottype", display = "X-TF-RobotType" },
}

local reserved_names = {}
for _, n in ipairs(RESERVED_NAMES) do
  reserved_names[n] = true
end

-- squash is the spelling-insensitive form of a name: lowercase, percent-decoded (repeatedly),
-- every byte outside [a-z0-9] dropped. Two names with the same squash are the same name to
-- some backend, so the gateway treats them as one.
local function squash(name)
  local s = string.lower(name)
  for _ = 1, 4 do
    local decoded = string.gsub(s, "%%(%x%x)", function(h)
      return string.char(tonumber(h, 16))
    end)
    decoded = string.lower(decoded)
    if decoded == s then
      break
    end
    s = decoded
  end
  return (string.gsub(s, "[^a-z0-9]", ""))
end

-- Squashed routing names (headers) and squashed protected cookie names -> canonical name.
local ROUTING_SQUASHED = {}
local COOKIE_SQUASHED = { [squash(ADMIN_TOKEN_COOKIE)] = ADMIN_TOKEN_COOKIE }
for _, h in ipairs(ROUTING) do
  ROUTING_SQUASHED[squash(h.name)] = h.name
  COOKIE_SQUASHED[squash(h.name)] = h.name
end

-- is_api_host reports whether the request is for the API host. Envoy matches virtual hosts
-- case-insensitively and with or without the port, so this must too, or a request could reach
-- the API route without passing the checks.
local function is_api_host(headers)
  if API_HOST == "" then
    return true
  end
  local host = headers:get(":authority") or headers:get("host") or ""
  host = string.lower(host)
  host = string.gsub(host, ":%d+$", "")
  host = string.gsub(host, "%.$", "")
  return host == API_HOST
end

-- valid_label reports whether v may be used as (part of) a DNS-1123 label.
local function valid_label(v)
  if v == nil or #v == 0 or #v > MAX_LABEL then
    return false
  end
  if string.find(v, "^[a-z0-9%-]+$") == nil then
    return false
  end
  return string.find(v, "^[a-z0-9]") ~= nil and string.find(v, "[a-z0-9]$") ~= nil
end

-- reserved reports whether ns is a namespace no tenant may hold.
local function reserved(ns)
  if reserved_names[ns] then
    return true
  end
  for _, p in ipairs(RESERVED_PREFIXES) do
    if string.sub(ns, 1, #p) == p then
      return true
    end
  end
  return false
end

-- bad_request answers 400 without calling any upstream. The message is a constant chosen
-- here (never echoes request data), so the JSON needs no escaping.
local function bad_request(handle, message)
  handle:respond(
    { [":status"] = "400", ["content-type"] = "application/json" },
    '{"error":"bad_request","message":"' .. message .. '"}'
  )
end

-- split returns every field of s between the single-byte separator sep, empty ones included.
local function split(s, sep)
  local out, start = {}, 1
  while true do
    local i = string.find(s, sep, start, true)
    if i == nil then
      out[#out + 1] = string.sub(s, start)
      return out
    end
    out[#out + 1] = string.sub(s, start, i - 1)
    start = i + 1
  end
end

local function trim(s)
  return (string.match(s, "^[ \t]*(.-)[ \t]*$"))
end

-- scan reads every header entry once (pairs must run to its end before any change): the
-- entries of each routing header, of Authorization and of Cookie, and whether a header name
-- is a routing name in another spelling.
local function scan(headers)
  local s = { routing = {}, authorization = {}, cookie = {}, near_miss = false }
  for _, h in ipairs(ROUTING) do
    s.routing[h.name] = {}
  end
  for key, value in pairs(headers) do
    local k = string.lower(key)
    if s.routing[k] ~= nil then
      table.insert(s.routing[k], value)
    elseif k == AUTHORIZATION then
      table.insert(s.authorization, value)
    elseif k == COOKIE then
      table.insert(s.cookie, value)
    elseif ROUTING_SQUASHED[squash(k)] ~= nil then
      s.near_miss = true
    end
  end
  return s
end

-- protected_parts lists the names in a cookie pair that are protected names in some
-- spelling (compared by squash): the name of every ','-separated piece, and for a piece with
-- an empty name (a nameless cookie "=x-tf-namespace=a", which browsers send back as its bare
-- value "x-tf-namespace=a") the text after that '=' up to the next one. A pair is
-- "name=value"; a name can also hide after a ',' (Envoy joining repeated Cookie headers with
-- ',', or a value with ',' read by a backend that splits there).
local function protected_parts(pair)
  local out = {}
  for i, piece in ipairs(split(pair, ",")) do
    local parts = split(piece, "=")
    local names = { { text = parts[1], first = (i == 1) } }
    if trim(parts[1]) == "" and parts[2] ~= nil then
      names[2] = { text = parts[2], first = false }
    end
    for _, n in ipairs(names) do
      local canonical = COOKIE_SQUASHED[squash(n.text)]
      if canonical ~= nil then
        out[#out + 1] = { canonical = canonical, text = n.text, first = n.first }
      end
    end
  end
  return out
end

-- parse_cookies reads the protected cookies (routing names, adminToken) out of the Cookie
-- entries: canonical name -> list of values, the pairs to forward upstream, whether a
-- protected cookie was found, and false when a protected name is misspelt or hidden (see
-- the rule at the top): a protected pair has exactly one protected part, its name, spelled
-- exactly up to case and followed by '='.
local function parse_cookies(entries)
  local found, kept, any = {}, {}, false
  for _, entry in ipairs(entries) do
    for _, segment in ipairs(split(entry, ";")) do
      local pair = trim(segment)
      local parts = protected_parts(pair)
      if #parts == 0 then
        if pair ~= "" then
          table.insert(kept, pair)
        end
      else
        local p = parts[1]
        if #parts > 1 or not p.first or string.lower(p.text) ~= p.canonical
          or string.sub(pair, #p.text + 1, #p.text + 1) ~= "=" then
          return nil, nil, nil, false
        end
        any = true
        found[p.canonical] = found[p.canonical] or {}
        table.insert(found[p.canonical], string.sub(pair, #p.text + 2))
      end
    end
  end
  return found, kept, any, true
end

-- resolve applies the rule at the top of the file: refuse ambiguity (true when it answered),
-- else promote cookies to headers and strip them.
local function resolve(handle, headers)
  local s = scan(headers)
  if s.near_miss then
    bad_request(handle, "ambiguous routing: a header name is an X-TF-* name in another spelling")
    return true
  end
  for _, h in ipairs(ROUTING) do
    if #s.routing[h.name] > 1 then
      bad_request(handle, "ambiguous routing: header " .. h.display .. " given more than once")
      return true
    end
  end
  if #s.authorization > 1 then
    bad_request(handle, "ambiguous routing: header Authorization given more than once")
    return true
  end
  local cookies, kept, any, ok = parse_cookies(s.cookie)
  if not ok then
    bad_request(handle, "ambiguous routing: a cookie name is a routing or adminToken name in another spelling or inside another cookie")
    return true
  end
  local promote = {}
  for _, h in ipairs(ROUTING) do
    local values = cookies[h.name] or {}
    if #values > 1 then
      bad_request(handle, "ambiguous routing: cookie " .. h.display .. " given more than once")
      return true
    end
    local header = s.routing[h.name][1]
    if #values == 1 then
      if header == nil then
        promote[h.name] = values[1]
      elseif header ~= values[1] then
        bad_request(handle, "ambiguous routing: header and cookie " .. h.display .. " differ")
        return true
      end
    end
  end
  local tokens = cookies[ADMIN_TOKEN_COOKIE] or {}
  if #tokens > 1 then
    bad_request(handle, "ambiguous routing: cookie adminToken given more than once")
    return true
  end
  local bearer = nil
  if #tokens == 1 then
    -- Only RFC 6750 b64token characters, so the cookie cannot smuggle anything else into the
    -- Authorization header.
    if string.find(tokens[1], "^[A-Za-z0-9%-%._~%+/]+=*$") == nil then
      bad_request(handle, "invalid cookie adminToken: must be an RFC 6750 bearer token")
      return true
    end
    bearer = "Bearer " .. tokens[1]
    local auth = s.authorization[1]
    if auth ~= nil then
      if auth ~= bearer then
        bad_request(handle, "ambiguous routing: cookie adminToken and header Authorization differ")
        return true
      end
      bearer = nil
    end
  end
  for _, h in ipairs(ROUTING) do
    if promote[h.name] ~= nil then
      headers:replace(h.name, promote[h.name])
    end
  end
  if bearer ~= nil then
    headers:replace(AUTHORIZATION, bearer)
  end
  if any then
    if #kept > 0 then
      headers:replace(COOKIE, table.concat(kept, "; "))
    else
      headers:remove(COOKIE)
    end
  end
  return false
end

-- protected_set_cookie reports whether a Set-Cookie value sets a routing or adminToken cookie:
-- its name-value pair (before the first ';') has a protected part (protected_parts), e.g.
-- "X-TF-Namespace=a", "=x-tf-namespace=a" (a nameless cookie, sent back as its bare value)
-- or "a=1, x-tf-namespace=b".
local function protected_set_cookie(v)
  return #protected_parts(string.match(v, "^[^;]*")) > 0
end

-- strip_set_cookies drops protected Set-Cookies: it reads them all (iteration completes
-- before any change), and only when one must go, removes them and re-adds the others in order.
local function strip_set_cookies(headers)
  local all, drop = {}, false
  for key, value in pairs(headers) do
    if string.lower(key) == SET_COOKIE then
      all[#all + 1] = value
      if protected_set_cookie(value) then
        drop = true
      end
    end
  end
  if not drop then
    return
  end
  headers:remove(SET_COOKIE)
  for _, v in ipairs(all) do
    if not protected_set_cookie(v) then
      headers:add(SET_COOKIE, v)
    end
  end
end

local tfrs = {}

-- strip_upstream removes the headers only the route filter may set, from every request
-- whatever its host, so a client's copy never survives either filter.
local function strip_upstream(headers)
  headers:remove(UPSTREAM_HEADER)
  headers:remove(UPSTREAM_CLUSTER_HEADER)
end

-- cookies resolves the routing values (see the top of the file).
function tfrs.cookies(handle)
  local headers = handle:headers()
  strip_upstream(headers)
  if not is_api_host(headers) then
    return
  end
  resolve(handle, headers)
end

-- route enforces the routing contract and selects the upstream (see the top of the file).
function tfrs.route(handle)
  local headers = handle:headers()
  strip_upstream(headers)
  if not is_api_host(headers) then
    return
  end
  if resolve(handle, headers) then
    return
  end
  local values = {}
  for _, h in ipairs(ROUTING) do
    local v = headers:get(h.name)
    if v == nil or v == "" then
      bad_request(handle, "missing header " .. h.display)
      return
    end
    if not valid_label(v) then
      bad_request(handle, "invalid header " .. h.display .. ": must match ^[a-z0-9-]+$, at most 63 characters, starting and ending with a letter or digit")
      return
    end
    values[h.key] = v
  end
  -- No '-' in the robot type: the first '-' of a robot's names ends its type, so no two
  -- (type, id) pairs share a Service (chat-bot/1 and chat/bot-1 would).
  if string.find(values.robot_type, "-", 1, true) ~= nil then
    bad_request(handle, "invalid header X-TF-RobotType: must not contain '-'")
    return
  end
  local service = values.robot_type .. "-" .. values.robot_id .. SERVICE_SUFFIX
  if #service > MAX_LABEL then
    bad_request(handle, "invalid headers X-TF-RobotType and X-TF-RobotId: together too long for a service name")
    return
  end
  if reserved(values.namespace) then
    bad_request(handle, "invalid header X-TF-Namespace: not a tenant namespace")
    return
  end
  local upstream = service .. "." .. values.namespace .. ".svc." .. CLUSTER_DOMAIN
  headers:replace(UPSTREAM_HEADER, upstream)
  headers:replace(UPSTREAM_CLUSTER_HEADER, "outbound|" .. UPSTREAM_PORT .. "||" .. upstream)
end

function envoy_on_request(request_handle)
  tfrs[ENTRY](request_handle)
end

function envoy_on_response(response_handle)
  strip_set_cookies(response_handle:headers())
end
