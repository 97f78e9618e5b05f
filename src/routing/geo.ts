// Where a client is, and how far that is from a cluster. The edge knows the client's location
// (request.cf); local runs and tests, or a trusted proxy in front, say it in a header named in
// config (`geo.header`, "lat,lon"). Pure.
import { GatewayError } from "../core/errors.js";

export interface GeoPoint {
  lat: number;
  lon: number;
}

const EARTH_RADIUS_KM = 6371.0088;
const rad = (deg: number) => (deg * Math.PI) / 180;

/** Great-circle distance in km (haversine). */
export function haversineKm(a: GeoPoint, b: GeoPoint): number {
  const dLat = rad(b.lat - a.lat);
  const dLon = rad(b.lon - a.lon);
  const h = Math.sin(dLat / 2) ** 2 + Math.cos(rad(a.lat)) * Math.cos(rad(b.lat)) * Math.sin(dLon / 2) ** 2;
  return 2 * EARTH_RADIUS_KM * Math.asin(Math.min(1, Math.sqrt(h)));
}

/** A point from latitude and longitude given as numbers or numeric strings (request.cf gives
 *  strings); undefined when either is missing or out of range. */
export function geoPoint(lat: unknown, lon: unknown): GeoPoint | undefined {
  const la = typeof lat === "string" && lat.trim() !== "" ? Number(lat) : lat;
  const lo = typeof lon === "string" && lon.trim() !== "" ? Number(lon) : lon;
  if (typeof la !== "number" || typeof lo !== "number" || !Number.isFinite(la) || !Number.isFinite(lo)) return undefined;
  if (la < -90 || la > 90 || lo < -180 || lo > 180) return undefined;
  return { lat: la, lon: lo };
}

/** The configured geo header's value: "lat,lon". A value that is not one is the client's
 *  mistake: 400 naming the header. */
export function parseGeoHeader(name: string, value: string): GeoPoint {
  const parts = value.split(",");
  const point = parts.length === 2 ? geoPoint(parts[0], parts[1]) : undefined;
  if (!point) throw new GatewayError("invalid_request", 400, `${name}: must be "lat,lon" in degrees (lat -90..90, lon -180..180)`, undefined, name);
  return point;
}

/** The client's location for a request: the configured header when present, else the edge's
 *  (request.cf latitude/longitude), else unknown. */
export function clientLocation(headerName: string | undefined, headers: Headers, cf: unknown): GeoPoint | undefined {
  const value = headerName !== undefined ? headers.get(headerName) : null;
  if (value !== null) return parseGeoHeader(headerName!, value);
  if (typeof cf !== "object" || cf === null) return undefined;
  const { latitude, longitude } = cf as { latitude?: unknown; longitude?: unknown };
  return geoPoint(latitude, longitude);
}
