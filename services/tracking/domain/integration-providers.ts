// The fixed list of external tracker providers a feed may name, with how ready each is to post
// feed observations itself. Pure data; GET /api/integrations/providers answers it as is.

export type ProviderReadiness = "ready" | "bridge-required";

export interface IntegrationProviderInfo {
  id: string;
  name: string;
  readiness: ProviderReadiness;
  category: string;
  description: string;
}

// "ready" is kept for providers that can send our documented JSON body unaided (a configurable
// HTTP request); anything that speaks its own format needs a relay, however small.
export const integrationProviders: readonly IntegrationProviderInfo[] = [
  {
    id: "generic-webhook",
    name: "Generic webhook",
    readiness: "ready",
    category: "webhook",
    description: "Any system that can POST JSON sends the feed observation body to the feed's observation URL.",
  },
  {
    id: "gps-http",
    name: "GPS tracker (HTTP)",
    readiness: "ready",
    category: "tracker",
    description: "Trackers and tracker gateways whose HTTP(S) reporting can be pointed at the feed's observation URL with this body.",
  },
  {
    id: "meshtastic",
    name: "Meshtastic",
    readiness: "bridge-required",
    category: "mesh-radio",
    description: "LoRa mesh nodes; a gateway node's MQTT or serial bridge relays their position packets.",
  },
  {
    id: "apple-findmy",
    name: "Apple Find My",
    readiness: "bridge-required",
    category: "consumer-network",
    description: "No public API; a bridge running with the owner's account relays item and device locations.",
  },
  {
    id: "google-findhub",
    name: "Google Find Hub",
    readiness: "bridge-required",
    category: "consumer-network",
    description: "No public API; a bridge running with the owner's account relays device and tag locations.",
  },
  {
    id: "samsung-find",
    name: "Samsung Find",
    readiness: "bridge-required",
    category: "consumer-network",
    description: "No public API; a bridge running with the owner's account relays device and SmartTag locations.",
  },
  {
    id: "home-assistant",
    name: "Home Assistant",
    readiness: "ready",
    category: "home-automation",
    description: "An automation with a rest_command posts device_tracker positions to the feed directly.",
  },
  {
    id: "owntracks",
    name: "OwnTracks",
    readiness: "bridge-required",
    category: "tracker",
    description: "The app's HTTP or MQTT mode sends OwnTracks' own JSON; a relay maps tid, lat, lon and tst onto the feed body.",
  },
  {
    id: "traccar",
    name: "Traccar",
    readiness: "bridge-required",
    category: "tracker",
    description: "Traccar's position forwarding sends its own format; a relay maps each position (uniqueId as externalTrackerId).",
  },
  {
    id: "signal",
    name: "Signal",
    readiness: "bridge-required",
    category: "messaging",
    description: "Shared locations in Signal messages, read by a signal-cli bridge.",
  },
  {
    id: "telegram",
    name: "Telegram",
    readiness: "bridge-required",
    category: "messaging",
    description: "Shared and live locations sent to a Telegram bot, relayed by the bot.",
  },
  {
    id: "twilio-sms",
    name: "Twilio SMS",
    readiness: "bridge-required",
    category: "messaging",
    description: "Position text messages; Twilio's inbound webhook is form-encoded, so a relay parses the coordinates.",
  },
  {
    id: "smtp-email",
    name: "Email (SMTP)",
    readiness: "bridge-required",
    category: "messaging",
    description: "Position reports by email, parsed by a mail relay.",
  },
  {
    id: "obd-telematics",
    name: "OBD-II telematics",
    readiness: "bridge-required",
    category: "telematics",
    description: "Vehicle dongles report to their vendor's server; a relay forwards the positions.",
  },
  {
    id: "ble-sensors",
    name: "BLE sensors",
    readiness: "bridge-required",
    category: "sensor",
    description: "Bluetooth beacons and tags heard by a gateway, which relays their positions.",
  },
];

const byId = new Map(integrationProviders.map((p) => [p.id, p]));

export const providerIds: readonly string[] = integrationProviders.map((p) => p.id);

export function findProvider(id: string): IntegrationProviderInfo | undefined {
  return byId.get(id);
}
