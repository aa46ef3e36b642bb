def main() -> None:
    print("studroom")
