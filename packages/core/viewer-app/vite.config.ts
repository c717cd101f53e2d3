import { defineConfig } from "vite";

// The build lands inside the Python package, so the wheel ships it and no Node is needed at run time.
export default defineConfig({
  base: "/",
  build: {
    outDir: "../src/stratamem/core/viewer/static",
    emptyOutDir: true,
    assetsDir: "assets",
    target: "es2022",
    modulePreload: { polyfill: false },
    sourcemap: false,
  },
});
