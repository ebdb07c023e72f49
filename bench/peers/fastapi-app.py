"""Peer of benchmark 2: the architecture of the reference product, one FastAPI app served by
uvicorn that holds the sensor object in its own process and answers the same two routes Mimic
answers (with the same bearer-key check), so a load generator can drive both alike.

Run: /usr/bin/python3 bench/peers/fastapi-app.py --port 8001 --sensor bench/fixtures/sensor.py --key K
"""
import argparse
import hmac
import importlib.util

from fastapi import FastAPI, Header, HTTPException, Request
import uvicorn


def load_sensor_class(path):
    spec = importlib.util.spec_from_file_location("bench_sensor", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.Sensor


def build_app(sensor_cls, key):
    app = FastAPI()
    objects = {"sensor": sensor_cls()}

    def check(authorization):
        if not hmac.compare_digest(authorization or "", f"Bearer {key}"):
            raise HTTPException(status_code=401, detail="bad product key")

    def lookup(name):
        obj = objects.get(name)
        if obj is None:
            raise HTTPException(status_code=404, detail=f"Component 'instances.{name}' not found")
        return obj

    @app.post("/api/v3/system/instances/{name}/method/run")
    async def run(name: str, request: Request, authorization: str = Header(None)):
        check(authorization)
        body = await request.body()
        if body:
            await request.json()  # Mimic parses the envelope too
        lookup(name).tick()
        return {"result": True}

    @app.get("/api/v3/system/instances/{name}/attributes/{attr}")
    async def attribute(name: str, attr: str, authorization: str = Header(None)):
        check(authorization)
        obj = lookup(name)
        if attr != "temperature":
            raise HTTPException(status_code=404, detail=f"no attribute {attr!r}")
        value = obj.temperature
        doc = {"internal_value": value, "external_value": value, "type": "float"}
        return {
            "name": attr, "type": "Attribute", "path": f"instances.{name}.attributes.{attr}", "state": None,
            **doc, "attr": {k: {"value": v} for k, v in doc.items()}, "children": [],
        }

    return app


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--sensor", required=True)
    parser.add_argument("--key", required=True)
    args = parser.parse_args()
    app = build_app(load_sensor_class(args.sensor), args.key)
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning", access_log=False)


if __name__ == "__main__":
    main()
