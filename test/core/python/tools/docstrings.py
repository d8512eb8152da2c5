class Tools:
    def google(self, query: str, limit: int = 5):
        """Search things.

        Args:
            query: what to look for
            limit: how many

        Returns:
            A list.
        """
        return query

    def late_params(self, a: str, b: int = 0):
        """
        Params after the return line.
        :return: something
        :param a: Alpha
        :param b: Beta
        """
        return a

    def trailing_blank(self, a: str):
        """
        Text, then a blank line before the params.

        :param a: Alpha
        """
        return a

    def spaced(self, a: str):
        """   Leading spaces.
            Indented	tab line.
        :param a:   padded description   
        :param missing: not a parameter
        :param: malformed
        """
        return a

    def empty_doc(self, a: str):
        """   """
        return a

    def only_params(self, a: str):
        """:param a: Alpha"""
        return a
