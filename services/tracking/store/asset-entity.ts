// The tracking_asset table as MikroORM sees it.
import { EntitySchema } from "@mikro-orm/core";

export interface AssetRow {
  id: string;
  name: string | null;
  description: string | null;
  category: string | null;
  speedThresholdKmh: number | null;
  /** Created by POST /api/system/seed; only these are wiped by a reset. */
  isSeeded: boolean;
  createdAt: Date;
  updatedAt: Date;
}

export const AssetEntity = new EntitySchema<AssetRow>({
  name: "TrackingAsset",
  tableName: "tracking_asset",
  properties: {
    id: { type: "uuid", primary: true },
    name: { type: "text", nullable: true },
    description: { type: "text", nullable: true },
    category: { type: "text", nullable: true },
    // double precision comes back from pg as a JS number; MikroORM's "double" type would make it a string.
    speedThresholdKmh: { type: "number", columnType: "double precision", nullable: true },
    isSeeded: { type: "boolean", default: false },
    createdAt: { type: "Date", columnType: "timestamptz" },
    updatedAt: { type: "Date", columnType: "timestamptz" },
  },
});
