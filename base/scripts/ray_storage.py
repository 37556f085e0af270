"""Writes a sample's results to the cluster's storage account (terraform/storage.tf; its name reaches the pods from
ConfigMap ray-storage as AZURE_STORAGE_ACCOUNT_NAME) with the pod's workload identity (ServiceAccount ray-workload,
label azure.workload.identity/use). Called on the driver, which runs on the Ray head."""
import json
import os


def upload(container: str, path: str, data: bytes) -> str:
    """Upload `data` to `container`/`path`; the blob's URL, or "" when no storage account is configured."""
    account = os.environ.get("AZURE_STORAGE_ACCOUNT_NAME", "")
    if not account:
        print(f"AZURE_STORAGE_ACCOUNT_NAME is not set: {container}/{path} is not uploaded")
        return ""
    from azure.identity import DefaultAzureCredential  # runtimeEnvYAML pip
    from azure.storage.blob import BlobServiceClient

    url = f"https://{account}.blob.core.windows.net"
    BlobServiceClient(url, credential=DefaultAzureCredential()).get_blob_client(container, path).upload_blob(data, overwrite=True)
    print(f"uploaded {url}/{container}/{path}")
    return f"{url}/{container}/{path}"


def upload_json(container: str, path: str, value) -> str:
    return upload(container, path, json.dumps(value, indent=2).encode())
