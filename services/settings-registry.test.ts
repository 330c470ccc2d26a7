// The settings registry and the module registry name the same modules, in the same order, with
// the very settings and renamed keys each module declares: the loader reads one, the mesh runs the other.
import test from "ava";
import { modules } from "./registry.js";
import { moduleSettings } from "./settings-registry.js";

test("the settings registry holds every registered module's own settings and renamed keys, in order", (t) => {
  t.deepEqual(
    moduleSettings.map((m) => m.name),
    modules.map((m) => m.name),
  );
  for (const [i, module] of modules.entries()) {
    t.is(moduleSettings[i]!.settings, module.settings, `${module.name}: the same schema object`);
    t.is(moduleSettings[i]!.renamedSettings, module.renamedSettings, `${module.name}: the same renamed keys`);
  }
});
