print("notification basics")
