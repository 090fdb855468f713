-- TFRS API routing: Envoy HTTP Lua filters on the Istio ingress gateway (LuaJIT, Lua 5.1).
--
-- One source, two filters. The Go package routing renders this file twice, filling the
-- @...@ placeholders below; ENTRY picks what the filter does:
--
--   "cookies" (EnvoyFilter envoyfilter-cookie, runs first): a browser cannot set custom
--             headers on navigations and WebSocket upgrades, so it may carry the routing values
--             as cookies. For each of X-TF-Namespace, X-TF-RobotId and X-TF-RobotType that is
--             absent (or empty) as a header, the cookie of the same name, matched
--             case-insensitively (X-TF-Namespace, x-tf-namespace ...), becomes the header. An
--             adminToken cookie becomes "Authorization: Bearer <token>" unless the request
--             already has an Authorization header. Headers always win over cookies.
--
--   "route"   (EnvoyFilter envoyfilter-lua-routing, runs second): the routing contract. The
--             three headers are required (missing or empty -> 400); each must match
--             ^[a-z0-9-]+$, be at most 63 bytes and start and end with [a-z0-9] (else 400), and
--             "<robotType>-<robotId>-api" must fit a DNS label (else 400). Otherwise it sets
--               x-tf-upstream         = <robotType>-<robotId>-api.<namespace>.svc.<cluster domain>
--               x-tf-upstream-cluster = outbound|<port>||<x-tf-upstream>
--             The VirtualService route "tfrs-api" is patched to pick its cluster from
--             x-tf-upstream-cluster (Envoy cluster_header), so a request that was not validated
--             here can never reach an upstream chosen by the client.
--
-- Both filters act only on requests for the API host (:authority compared case-insensitively,
-- port and trailing dot ignored). The route filter first strips x-tf-upstream and
-- x-tf-upstream-cluster from every request, whatever its host, because only this filter may
-- set them.
--
-- Go twin: routing.UpstreamHost / routing.Validate. routing_test.go runs this file under
-- gopher-lua and fails if the two ever disagree. Only the Envoy stream-handle API is used:
-- headers():get/replace/add/remove and respond.

local API_HOST = "@API_HOST@"
local ENTRY = "@ENTRY@"
local SERVICE_SUFFIX = "@SERVICE_SUFFIX@"
local CLUSTER_DOMAIN = "@CLUSTER_DOMAIN@"
local UPSTREAM_PORT = "@UPSTREAM_PORT@"
local MAX_LABEL = 63

local UPSTREAM_HEADER = "x-tf-upstream"
local UPSTREAM_CLUSTER_HEADER = "x-tf-upstream-cluster"
local AUTHORIZATION = "authorization"
local ADMIN_TOKEN_COOKIE = "admintoken"

-- The routing headers in the order they are checked; name is lowercase (Envoy's header keys
-- and the cookie names are compared lowercase), display is what error messages say.
local ROUTING = {
  { key = "namespace", name = "x-tf-namespace", display = "X-TF-Namespace" },
  { key = "robot_id", name = "x-tf-robotid", display = "X-TF-RobotId" },
  { key = "robot_type", name = "x-tf-robottype", display = "X-TF-RobotType" },
}

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

-- valid_label reports whether v may be used as (part of) a DNS-1123 label. This is stricter
-- than the contract's ^[a-z0-9-]+$ only where that pattern would let through a malformed host
-- (a leading or trailing '-').
local function valid_label(v)
  if v == nil or #v == 0 or #v > MAX_LABEL then
    return false
  end
  if string.find(v, "^[a-z0-9%-]+$") == nil then
    return false
  end
  return string.find(v, "^[a-z0-9]") ~= nil and string.find(v, "[a-z0-9]$") ~= nil
end

-- bad_request answers 400 without calling any upstream. The message is a constant chosen
-- here (never echoes request data), so the JSON needs no escaping.
local function bad_request(handle, message)
  handle:respond(
    { [":status"] = "400", ["content-type"] = "application/json" },
    '{"error":"bad_request","message":"' .. message .. '"}'
  )
end

-- parse_cookies splits a Cookie header into lowercase name -> value. Envoy joins repeated
-- cookie headers with ',' so both ';' and ',' separate pairs. The first occurrence of a name
-- wins (browsers send the most specific cookie first). Surrounding quotes are dropped.
local function parse_cookies(raw)
  local cookies = {}
  if raw == nil then
    return cookies
  end
  for pair in string.gmatch(raw, "[^;,]+") do
    local name, value = string.match(pair, "^%s*([^=]-)%s*=%s*(.-)%s*$")
    if name ~= nil and name ~= "" then
      name = string.lower(name)
      value = string.match(value, '^"(.*)"$') or value
      if cookies[name] == nil then
        cookies[name] = value
      end
    end
  end
  return cookies
end

local tfrs = {}

-- cookies promotes routing cookies and adminToken to headers (see the top of the file).
function tfrs.cookies(handle)
  local headers = handle:headers()
  if not is_api_host(headers) then
    return
  end
  local cookies = parse_cookies(headers:get("cookie"))
  for _, h in ipairs(ROUTING) do
    local current = headers:get(h.name)
    local value = cookies[h.name]
    if (current == nil or current == "") and value ~= nil and value ~= "" then
      -- Validation is the route filter's job; a bad cookie value gets its 400 there.
      headers:replace(h.name, value)
    end
  end
  local token = cookies[ADMIN_TOKEN_COOKIE]
  -- Only token characters (RFC 6750 b64token) so the cookie cannot smuggle anything else
  -- into the Authorization header.
  if token ~= nil and string.find(token, "^[A-Za-z0-9%-%._~%+/]+=*$") ~= nil then
    local auth = headers:get(AUTHORIZATION)
    if auth == nil or auth == "" then
      headers:replace(AUTHORIZATION, "Bearer " .. token)
    end
  end
end

-- route enforces the routing contract and selects the upstream (see the top of the file).
function tfrs.route(handle)
  local headers = handle:headers()
  headers:remove(UPSTREAM_HEADER)
  headers:remove(UPSTREAM_CLUSTER_HEADER)
  if not is_api_host(headers) then
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
  local upstream = service .. "." .. values.namespace .. ".svc." .. CLUSTER_DOMAIN
  headers:replace(UPSTREAM_HEADER, upstream)
  headers:replace(UPSTREAM_CLUSTER_HEADER, "outbound|" .. UPSTREAM_PORT .. "||" .. upstream)
end

function envoy_on_request(request_handle)
  tfrs[ENTRY](request_handle)
end
