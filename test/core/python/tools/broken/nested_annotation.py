class Tools:
    # Under postponed annotations, "Inner" cannot be resolved from module globals:
    # the reference's get_type_hints fails and so does the create.
    class Inner:
        pass

    def f(self, x: "Inner") -> str:
        return "x"
